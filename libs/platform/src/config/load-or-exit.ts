import { ConfigError, loadConfig, type AppConfig, type RawConfig } from './config';

/**
 * loadConfig for a process entry point (a service, the embedded runner, the CLI): an invalid setting ends the process
 * with `<name>: invalid configuration: …` (every problem listed) and exit code 2, instead of a stack trace.
 */
export function loadConfigOrExit(name: string, env: NodeJS.ProcessEnv = process.env, overrides: Partial<RawConfig> = {}): AppConfig {
  try {
    return loadConfig(env, overrides);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${name}: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}
