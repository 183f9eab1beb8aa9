"""Start Milvus standalone from the PyPI package `milvus`, reachable on 127.0.0.1 only, as one
process tree whose root PID the caller records.

Why not simply `milvus-server --data DIR` (the package's CLI)?
  * it is a Python wrapper that starts `milvus run standalone` as a child and ignores SIGTERM, so
    stopping the wrapper's PID would leave the server running;
  * Milvus 2.3 has no listen-address setting: its gRPC ports (19530 and eight internal ones) and
    the health/metrics port 9091 bind to all interfaces.
So this launcher prepares config and binaries through the package's own API (template, ports,
storage under --data, unpacking the bundled binaries and libraries), then, when it may (root),
runs the server in a private network namespace that has only its own loopback, and forwards
127.0.0.1:<port> and 127.0.0.1:<health-port> of the host into it. Nothing of Milvus is reachable
from outside the host, its internal ports cannot clash with anything, and SIGTERM to this process
stops the server (TERM, then KILL after --grace seconds) before this process exits.
Without the privilege for a namespace (or with --no-netns) it execs the server directly, which then
listens on all interfaces; it says so in the log.

usage: milvus_launch.py --data DIR [--port 19530] [--health-port 9091] [--etcd-log FILE]
                        [--grace 25] [--no-netns] [--unpack-only]
"""

import argparse
import asyncio
import ctypes
import ctypes.util
import fcntl
import os
import signal
import socket
import types
import struct
import sys
import threading
from os.path import join

import milvus  # the PyPI package `milvus` (embedded Milvus 2.3)

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

_libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)


def say(msg: str) -> None:
    print(f'[milvus-launch] {msg}', flush=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f'{what}: {os.strerror(err)}')


def unshare_net() -> None:
    _check(_libc.unshare(CLONE_NEWNET), 'unshare(CLONE_NEWNET)')


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG: the server gets SIGTERM if this launcher dies, even by SIGKILL."""
    _check(_libc.prctl(1, signal.SIGTERM, 0, 0, 0), 'prctl(PR_SET_PDEATHSIG)')


def setns(fd: int) -> None:
    _check(_libc.setns(fd, CLONE_NEWNET), 'setns(CLONE_NEWNET)')


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        ifreq = struct.pack('16sH14x', b'lo', 0)
        flags = struct.unpack('16sH14x', fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack('16sH14x', b'lo', flags | IFF_UP))


def _try_bind_reuse(self, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(('127.0.0.1', port))
        sock.listen()
        return sock
    except OSError:
        sock.close()
        return None


def prepare(args) -> tuple:
    """Write configs/milvus.yaml and unpack the binaries; return (executable, environment)."""
    base = os.path.abspath(args.data)
    config = milvus.MilvusServerConfig(data_dir=base, proxy_port=args.port)
    # The package probes ports with a plain bind(), which fails for a minute after a restart while the previous
    # server's connections sit in TIME_WAIT; the server itself (Go) binds with SO_REUSEADDR. Probe the same way.
    config.try_bind_port = types.MethodType(_try_bind_reuse, config)
    # The steps of MilvusServerConfig.resolve(), with two changes: logs go to stdout (the caller
    # redirects them to .local/logs/milvus.log) and every component advertises loopback.
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
            raise RuntimeError(f'milvus config item {key} is unresolved')
    config.cleanup_listen_ports()
    config.write_config()
    milvus._initialize_data_files(base)  # pylint: disable=protected-access
    env = os.environ.copy()
    env.update({
        'DEPLOY_MODE': 'STANDALONE',
        'METRICS_PORT': str(args.health_port),
        'MILVUS_RUN_DIR': join(base, 'run'),
        'LD_LIBRARY_PATH': ':'.join(filter(None, [join(base, 'bin'), os.environ.get('LD_LIBRARY_PATH', '')])),
    })
    return join(base, 'bin', 'milvus'), env


def exec_server(exe: str, env: dict, base: str) -> None:
    os.chdir(base)  # milvus reads configs/milvus.yaml relative to its working directory
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(exe, [exe, 'run', 'standalone'], env)


def listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(('127.0.0.1', port))
    except OSError as exc:
        sock.close()
        raise RuntimeError(f'cannot listen on 127.0.0.1:{port}: {exc.strerror}') from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(256 * 1024)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


class Forwarder:
    """Accept on host 127.0.0.1:port, connect to 127.0.0.1:port inside the server's namespace."""

    def __init__(self, child_ns: int, host_ns: int):
        self.child_ns = child_ns
        self.host_ns = host_ns

    def socket_in_child_ns(self) -> socket.socket:
        # A socket belongs to the namespace it was created in; only creation needs the switch.
        setns(self.child_ns)
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            setns(self.host_ns)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    async def serve(self, listener: socket.socket, port: int):
        loop = asyncio.get_running_loop()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            upstream = self.socket_in_child_ns()
            try:
                await loop.sock_connect(upstream, ('127.0.0.1', port))
            except OSError:
                upstream.close()
                writer.close()
                return
            up_reader, up_writer = await asyncio.open_connection(sock=upstream)
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            for w in (writer, up_writer):
                try:
                    w.close()
                except OSError:
                    pass

        return await asyncio.start_server(handle, sock=listener)


def run_in_netns(args, exe: str, env: dict, base: str) -> int:
    # Bind the host side first: if a port is taken, fail before starting anything.
    listeners = [(listen(args.port), args.port), (listen(args.health_port), args.health_port)]
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: own network namespace with loopback up, then become the server
        os.close(ready_r)
        for sock, _ in listeners:
            sock.close()
        try:
            die_with_parent()
            unshare_net()
            loopback_up()
        except OSError as exc:
            os.write(ready_w, f'error {exc}'.encode())
            os._exit(111)
        os.write(ready_w, b'ok')
        os.close(ready_w)
        exec_server(exe, env, base)
        os._exit(112)
    os.close(ready_w)
    status = os.read(ready_r, 4096).decode()
    os.close(ready_r)
    if status != 'ok':
        os.waitpid(pid, 0)
        for sock, _ in listeners:
            sock.close()
        raise OSError(status)
    say(f'server pid {pid} in a private network namespace; forwarding 127.0.0.1:{args.port} and '
        f'127.0.0.1:{args.health_port} into it')

    child_ns = os.open(f'/proc/{pid}/ns/net', os.O_RDONLY)
    host_ns = os.open('/proc/self/ns/net', os.O_RDONLY)
    exit_code = {'code': 1}
    stopping = {'flag': False}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def reap() -> None:
            _, wstatus = os.waitpid(pid, 0)
            exit_code['code'] = os.waitstatus_to_exitcode(wstatus)
            loop.call_soon_threadsafe(done.set)

        threading.Thread(target=reap, daemon=True).start()

        def on_signal(signum: int) -> None:
            say(f'signal {signum}: stopping the server (pid {pid})')
            stopping['flag'] = True
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                return

            def force() -> None:
                if not done.is_set():
                    say(f'server still running after {args.grace}s, sending KILL')
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

            loop.call_later(args.grace, force)

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, on_signal, signum)
        forwarder = Forwarder(child_ns, host_ns)
        servers = [await forwarder.serve(sock, port) for sock, port in listeners]
        await done.wait()
        for server in servers:
            server.close()
        if stopping['flag'] and exit_code['code'] == -signal.SIGABRT:
            # Milvus 2.3.5 panics in CloseEtcdClient *after* logging "All cleanup done".
            say('server stopped (its abort after "All cleanup done" is a known, harmless Milvus 2.3 quirk)')
            exit_code['code'] = 0
        else:
            say(f'server exited with code {exit_code["code"]}')

    asyncio.run(main())
    return exit_code['code']


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--data', required=True, help='base dir: configs/, data/, bin/ go under it')
    parser.add_argument('--port', type=int, default=19530, help='gRPC (proxy) port')
    parser.add_argument('--health-port', type=int, default=9091, help='HTTP /healthz and /metrics port')
    parser.add_argument('--etcd-log', default='', help='file for the embedded etcd log (default: under --data)')
    parser.add_argument('--grace', type=float, default=25, help='seconds between TERM and KILL on stop')
    parser.add_argument('--no-netns', action='store_true', help='run in the host network namespace')
    parser.add_argument('--unpack-only', action='store_true', help='only unpack the bundled binaries')
    args = parser.parse_args()

    base = os.path.abspath(args.data)
    os.makedirs(base, exist_ok=True)
    if args.unpack_only:
        milvus._initialize_data_files(base)  # pylint: disable=protected-access
        print(f'milvus {milvus.__version__} binaries unpacked in {join(base, "bin")}')
        return 0

    exe, env = prepare(args)
    if not args.no_netns and os.geteuid() == 0:
        try:
            return run_in_netns(args, exe, env, base)
        except OSError as exc:
            say(f'no private network namespace ({exc}); starting in the host namespace')
    say('WARNING: Milvus 2.3 listens on all interfaces in the host namespace '
        f'(ports {args.port}, {args.health_port} and its internal ones)')
    exec_server(exe, env, base)
    return 1  # not reached


if __name__ == '__main__':
    sys.exit(main())
