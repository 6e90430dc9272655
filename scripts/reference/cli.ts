/**
 * The CLI reference (docs/reference/cli.md), written from the commands' own commander
 * definitions: every command and subcommand's `--help`, exactly as the program prints it.
 */
import type { Command } from 'commander';
import { loadProgram } from '../../src/cli/main.ts';

/** Help is wrapped as on an 100-column terminal, whatever terminal regenerates the page. */
const HELP_WIDTH = 100;

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function* walk(cmd: Command): Generator<Command> {
  yield cmd;
  for (const sub of cmd.commands) yield* walk(sub);
}

export async function cliReference(): Promise<string> {
  const program = await loadProgram();
  const sections: string[] = [];
  for (const cmd of walk(program)) {
    let help = '';
    cmd.configureOutput({ writeOut: (s) => (help += s), getOutHelpWidth: () => HELP_WIDTH });
    cmd.configureHelp({ helpWidth: HELP_WIDTH });
    cmd.outputHelp();
    const path = commandPath(cmd);
    const depth = path.split(' ').length;
    sections.push(`${'#'.repeat(Math.min(depth + 1, 4))} \`${path}\`\n\n\`\`\`text\n${help.trimEnd()}\n\`\`\`\n`);
  }
  return sections.join('\n');
}
