/** Reading one setting of the list (settings.ts): its default when unset, else its checked value. */
import { SETTINGS, type SettingName } from './settings.js';
import type { Setting, ValueKind } from './values.js';

/** The variable and its other spellings, as the page lists them. */
export function namesOf(name: SettingName): readonly string[] {
  return (SETTINGS[name] as Setting).names ?? [name];
}

/** What a setting holds once read: its kind's value, or its default. */
export type ValueOf<N extends SettingName> = (typeof SETTINGS)[N] extends {
  type: ValueKind<infer T>;
  default: infer D;
}
  ? T | D
  : never;

/**
 * One setting's value from its raw text (`undefined`: not set): the default when unset, else the
 * checked value; a bad one throws a ConfigError naming `label` (the setting's label, or its key).
 */
export function read<N extends SettingName>(name: N, raw: string | undefined, label?: string): ValueOf<N> {
  const setting: Setting = SETTINGS[name];
  const unset = setting.type.unset ?? ((value: string) => value === '');
  if (raw === undefined || unset(raw)) return setting.default as ValueOf<N>;
  return setting.type.parse(label ?? setting.label ?? name, raw) as ValueOf<N>;
}

/** One setting's value from the environment, by its key. */
export function fromEnv<N extends SettingName>(env: Record<string, string | undefined>, name: N): ValueOf<N> {
  return read(name, env[name]);
}
