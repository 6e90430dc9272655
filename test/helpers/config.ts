/** What loading `env` refuses: the ConfigError's message (the variable, the value, what is valid). */
import { ConfigError, loadConfig } from '../../src/config.ts';

export function configErrorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (e: unknown) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error(`no error for ${JSON.stringify(env)}`);
}
