/** Every page with a generated part; another generated page (a CLI or a tables reference) is one more entry. */
import { configurationPage } from './configuration.ts';
import type { GeneratedPage } from './generated.ts';

export const PAGES: readonly GeneratedPage[] = [configurationPage];
