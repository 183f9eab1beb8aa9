"""Start Milvus standalone from the PyPI package `milvus` as ONE process whose PID the caller knows.

`milvus-server` (the package's CLI) is a Python wrapper that starts the real `milvus run standalone`
binary as a child and ignores SIGTERM, so stopping the wrapper's PID would orphan the server. This
launcher does the same preparation through the package's own API (config from its template, ports,
storage under --data, unpacking the bundled binaries and libraries) and then *execs* the binary, so
the PID recorded by servers.sh is the Milvus server itself and SIGTERM stops it cleanly.

usage: milvus_launch.py --data DIR [--port 19530] [--health-port 9091] [--etcd-log FILE] [--unpack-only]
"""

import argparse
import os
import socket
import sys
from os.path import join

import milvus  # the PyPI package `milvus` (embedded Milvus 2.3)


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(('127.0.0.1', port))
            return True
        except OSError:
            return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--data', required=True, help='base dir: configs/, data/, bin/ go under it')
    parser.add_argument('--port', type=int, default=19530, help='gRPC (proxy) port')
    parser.add_argument('--health-port', type=int, default=9091, help='HTTP /healthz and /metrics port')
    parser.add_argument('--etcd-log', default='', help='file for the embedded etcd log (default: under --data)')
    parser.add_argument('--unpack-only', action='store_true', help='only unpack the bundled binaries')
    args = parser.parse_args()

    base = os.path.abspath(args.data)
    os.makedirs(base, exist_ok=True)
    if args.unpack_only:
        milvus._initialize_data_files(base)  # pylint: disable=protected-access
        print(f'milvus {milvus.__version__} binaries unpacked in {join(base, "bin")}')
        return 0

    if not port_free(args.health_port):
        print(f'port 127.0.0.1:{args.health_port} (health) is in use', file=sys.stderr)
        return 1

    config = milvus.MilvusServerConfig(data_dir=base, proxy_port=args.port)
    # The same steps as MilvusServerConfig.resolve(), with two changes: logs go to stdout (the
    # caller redirects them to .local/logs/milvus.log) and every component advertises loopback.
    config.cleanup_listen_ports()
    config.resolve_all_listen_ports()  # proxy_port is fixed; internal ports take the first free one
    config.resolve_storage()
    config.set('system_log_path', '')
    if args.etcd_log:
        config.set('etcd_log_path', os.path.abspath(args.etcd_log))
    for component in ('rootCoord', 'proxy', 'queryCoord', 'queryNode', 'indexNode', 'dataCoord', 'dataNode'):
        config.set(f'{component}.ip', '127.0.0.1')
    for key, value in config.configurable_items.items():
        if value[1] is None:
            print(f'milvus config item {key} is unresolved', file=sys.stderr)
            return 1
    config.cleanup_listen_ports()
    config.write_config()

    milvus._initialize_data_files(base)  # pylint: disable=protected-access
    exe = join(base, 'bin', 'milvus')
    env = os.environ.copy()
    env.update({
        'DEPLOY_MODE': 'STANDALONE',
        'METRICS_PORT': str(args.health_port),
        'MILVUS_RUN_DIR': join(base, 'run'),
        'LD_LIBRARY_PATH': ':'.join(filter(None, [join(base, 'bin'), os.environ.get('LD_LIBRARY_PATH', '')])),
    })
    os.chdir(base)  # milvus reads configs/milvus.yaml relative to its working directory
    sys.stdout.flush()
    os.execve(exe, [exe, 'run', 'standalone'], env)
    return 1  # not reached


if __name__ == '__main__':
    sys.exit(main())
