/** docs/reference/configuration.md: every setting of SETTINGS (src/config.ts), by group. */
import { SETTING_GROUPS, SETTINGS, shownDefaultOf, type Setting } from '../../src/config.ts';
import { markdownTable, type GeneratedPage } from './generated.ts';

function row(name: string, s: Setting): string[] {
  const shown = shownDefaultOf(s);
  return [
    `\`${name}\``,
    shown === undefined ? 'none' : `\`${shown}\``,
    s.unit ?? '',
    s.secret === true ? `${s.doc} (secret: never echoed)` : s.doc,
  ];
}

/** The reference: one table per group, the settings in the order of SETTINGS. */
export function renderConfigurationReference(): string {
  const settings = Object.entries(SETTINGS) as [string, Setting][];
  return SETTING_GROUPS.map((group) => {
    const rows = settings.filter(([, s]) => s.group === group).map(([name, s]) => row(name, s));
    return `## ${group}\n\n${markdownTable(['variable', 'default', 'unit', 'meaning'], rows)}`;
  }).join('\n\n');
}

export const configurationPage: GeneratedPage = {
  path: 'docs/reference/configuration.md',
  source: '`SETTINGS` in `src/config.ts`',
  render: renderConfigurationReference,
  skeleton: [
    '# Configuration reference',
    '',
    'Every setting is an environment variable, read and validated once at startup',
    '(see [Configuration](../configuration.md)). Unset and empty variables take the default.',
    '',
    '<!-- BEGIN GENERATED -->',
    '<!-- END GENERATED -->',
    '',
  ].join('\n'),
};
