/**
 * A language as the commands and pages take it: an ISO 639 code, optionally with a region or
 * script subtag (`en`, `pt-BR`, `zh-Hant`): what the interface's `lang` parameter and a
 * transcript's `lang` carry. One pattern for `sources --lang`, `search --lang`, `export --lang`
 * and the overview's search box.
 */
export const LANG_CODE_RE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;
