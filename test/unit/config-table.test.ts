/**
 * The table of settings (SETTINGS in src/config.ts) is the one definition the loader, the type and
 * the reference come from; these are the rules its entries keep (STYLE.md 6, 10).
 */
import { describe, expect, it } from 'vitest';
import { ENV_VARIABLES, SETTING_GROUPS, SETTINGS, shownDefaultOf, type Setting } from '../../src/config.ts';
import { configErrorOf } from '../helpers/config.ts';

const entries = Object.entries(SETTINGS) as [string, Setting][];

/** A unit and the suffix a variable measured in it carries. */
const SUFFIX_OF_UNIT: Record<string, string> = { ms: '_MS', days: '_DAYS', bytes: '_BYTES' };

describe('the settings table', () => {
  it('is what the configuration reads: every variable, once, each in a listed group with a line of doc', () => {
    expect(ENV_VARIABLES).toEqual(Object.keys(SETTINGS));
    expect(ENV_VARIABLES.length).toBeGreaterThan(60);
    for (const [name, s] of entries) {
      expect(SETTING_GROUPS, name).toContain(s.group);
      expect(s.doc.trim(), name).not.toBe('');
      expect(s.doc, name).not.toMatch(/\n/);
    }
  });

  it('names the unit of a time, an age or a size in the variable, as its unit says', () => {
    for (const [name, s] of entries) {
      const suffix = s.unit === undefined ? undefined : SUFFIX_OF_UNIT[s.unit];
      if (suffix !== undefined) expect(name, `${name} is in ${s.unit}`).toMatch(new RegExp(`${suffix}$`));
      for (const [unit, end] of Object.entries(SUFFIX_OF_UNIT)) {
        if (name.endsWith(end)) expect(s.unit, `${name} ends in ${end}`).toBe(unit);
      }
    }
  });

  it('shows the default the loader applies', () => {
    expect(shownDefaultOf(SETTINGS.API_CONNECT_TIMEOUT_MS)).toBe('10000');
    expect(shownDefaultOf(SETTINGS.QUEUE_PREFIX)).toBe('{vsi}');
    expect(shownDefaultOf(SETTINGS.API_KEY)).toBeUndefined();
    expect(shownDefaultOf(SETTINGS.LOG_LEVEL)).toBe('info');
  });

  it('never echoes the value of a key, token, password or secret, and echoes the others', () => {
    const value = 'bad\nvalue-0123456789abcdef';
    for (const [name, s] of entries) {
      expect(s.secret === true, `${name} is marked secret`).toBe(/_(KEY|TOKEN|PASSWORD|HEADERS)$|SECRET/.test(name));
      const message = configErrorOf({ [name]: value });
      expect(message, name).toMatch(new RegExp(`^${name}: invalid (value|item) `));
      if (s.secret === true) {
        expect(message, name).toContain('(value hidden)');
        expect(message, name).not.toContain('0123456789abcdef');
      } else {
        expect(message, name).not.toContain('(value hidden)');
      }
    }
  });
});
