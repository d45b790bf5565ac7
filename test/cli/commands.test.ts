import { describe, expect, it } from 'vitest';
import { COMMAND_FILES, filesFor, registerCommands } from '../../src/cli/commands.js';
import { createProgram } from '../../src/cli/program.js';

/** `parley --help` as the program prints it with every command file loaded, and as it starts. */
async function rootHelp(args: readonly string[]): Promise<string> {
  const program = createProgram();
  await registerCommands(program, args);
  return program.helpInformation();
}

/**
 * `parley <command>` loads only the file that registers <command>, and `parley --help` none: the
 * list of command files (src/cli/commands.ts) names each file's top-level commands as its help
 * lists them, and must say what the files really register.
 */
describe('the list of command files', () => {
  it("names each file's top-level commands, in the order they register", async () => {
    for (const file of COMMAND_FILES) {
      const program = createProgram();
      (await file.load())(program);
      expect(program.commands.map((c) => c.name())).toEqual(Object.keys(file.commands));
    }
  });

  it('lists them in `parley --help` as the loaded files do, byte for byte', async () => {
    // An unknown command loads every file.
    const loaded = await rootHelp(['no-such-command']);
    expect(loaded).toContain('  org                organizations\n');
    expect(await rootHelp(['--help'])).toBe(loaded);
    expect(await rootHelp([])).toBe(loaded);
  });

  it('loads none for the help and version of `parley` itself, one for a command, all for an unknown one', () => {
    const fileOf = (name: string) => COMMAND_FILES.find((f) => Object.hasOwn(f.commands, name));
    for (const args of [[], ['--help'], ['-h'], ['-V'], ['--version'], ['help'], ['--help', 'org']])
      expect(filesFor(args), args.join(' ')).toEqual([]);
    expect(filesFor(['org', 'create', '--name', 'x'])).toEqual([fileOf('org')]);
    expect(filesFor(['help', 'audit'])).toEqual([fileOf('user')]);
    expect(filesFor(['orgg'])).toEqual(COMMAND_FILES);
    expect(filesFor(['--json', 'org'])).toEqual(COMMAND_FILES);
  });
});
