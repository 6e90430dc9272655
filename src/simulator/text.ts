/**
 * Synthetic text: titles, descriptions, tags, names and transcript sentences in several
 * languages. The point is realistic *shape* (unicode, emoji, quotes, newlines, empty and very
 * long values), not meaning: byte-exact storage and JSON escaping get exercised for free.
 */
import type { Rng } from './prng.ts';

/** Languages transcripts can come in, most common first. */
export const LANGS = ['en', 'es', 'fr', 'de', 'pt', 'ja', 'ru', 'hi', 'ar', 'ko'] as const;
export type Lang = (typeof LANGS)[number];

const WORDS: Record<Lang, readonly string[]> = {
  en: [
    'the',
    'video',
    'today',
    'we',
    'build',
    'a',
    'simple',
    'engine',
    'with',
    'data',
    'and',
    'model',
    'quick',
    'guide',
    'how',
    'to',
    'learn',
    'fast',
    'really',
    'works',
    'great',
    'cloud',
    'review',
    'first',
    'look',
    'inside',
    'new',
    'secret',
    'project',
    'music',
    'garden',
    'coffee',
    'travel',
    'tutorial',
    'beginner',
    'advanced',
    'code',
    'rust',
    'python',
    'history',
    'science',
    'space',
  ],
  es: [
    'el',
    'vídeo',
    'hoy',
    'vamos',
    'a',
    'construir',
    'una',
    'canción',
    'pequeña',
    'año',
    'niño',
    'mañana',
    'fácil',
    'rápido',
    'guía',
    'cómo',
    'aprender',
    'corazón',
    'ciudad',
    'música',
    'qué',
  ],
  fr: [
    'le',
    'la',
    'vidéo',
    'aujourd’hui',
    'nous',
    'allons',
    'créer',
    'très',
    'été',
    'déjà',
    'être',
    'français',
    'cœur',
    'naïve',
    'façon',
    'élève',
    'où',
    'là',
    'forêt',
    'château',
    'leçon',
  ],
  de: [
    'das',
    'Video',
    'heute',
    'wir',
    'bauen',
    'eine',
    'Straße',
    'größer',
    'schön',
    'Übung',
    'für',
    'Mädchen',
    'müssen',
    'Bäume',
    'weiß',
    'Grüße',
    'Käse',
    'Fußball',
    'Brücke',
    'äußerst',
  ],
  pt: [
    'o',
    'vídeo',
    'hoje',
    'vamos',
    'construir',
    'uma',
    'canção',
    'coração',
    'não',
    'são',
    'irmã',
    'pão',
    'ação',
    'lição',
    'você',
    'também',
    'está',
    'música',
    'cidade',
    'rápido',
  ],
  ja: [
    '今日',
    'は',
    '動画',
    'を',
    '作り',
    'ます',
    'とても',
    '簡単',
    'な',
    '方法',
    'です',
    '東京',
    '音楽',
    '料理',
    'ラーメン',
    'プログラミング',
    'カメラ',
    '旅行',
    'こんにちは',
    'ありがとう',
  ],
  ru: [
    'сегодня',
    'мы',
    'сделаем',
    'видео',
    'очень',
    'простой',
    'способ',
    'это',
    'быстро',
    'музыка',
    'город',
    'ёлка',
    'чай',
    'школа',
    'программа',
    'история',
    'наука',
    'друзья',
  ],
  hi: [
    'आज',
    'हम',
    'एक',
    'वीडियो',
    'बनाएंगे',
    'बहुत',
    'आसान',
    'तरीका',
    'है',
    'संगीत',
    'शहर',
    'खाना',
    'यात्रा',
    'धन्यवाद',
    'नमस्ते',
    'विज्ञान',
  ],
  ar: [
    'اليوم',
    'سوف',
    'نصنع',
    'فيديو',
    'سهل',
    'جدا',
    'طريقة',
    'هذه',
    'موسيقى',
    'مدينة',
    'شكرا',
    'مرحبا',
    'علوم',
    'تاريخ',
    'سفر',
  ],
  ko: [
    '오늘',
    '우리는',
    '영상을',
    '만들',
    '거예요',
    '아주',
    '쉬운',
    '방법',
    '음악',
    '도시',
    '여행',
    '감사합니다',
    '안녕하세요',
    '과학',
    '요리',
  ],
};

/** Languages written without spaces between words. */
const NO_SPACES: ReadonlySet<Lang> = new Set(['ja']);

const EMOJI = ['🔥', '🚀', '✨', '🎵', '😂', '👍', '🎮', '📈', '❤️', '🇯🇵', '👩‍💻', '🤖'];
const TITLE_EXTRAS = [
  ' | Part 2',
  ' (official)',
  ' [4K]',
  ' — full guide',
  ': "the truth"',
  ' & more',
  " it's <not> what you think",
  ' 100%',
  ' #shorts',
  ' \\o/',
];
const CAPTION_MARKERS = ['[Music]', '[Applause]', '[Laughter]', '>>', '♪'];
const SITES = ['https://example.com/', 'https://docs.example.org/guide?ref=video&x=1', 'https://shop.example.net/p/42'];

function isLatin(lang: Lang): boolean {
  return lang === 'en' || lang === 'es' || lang === 'fr' || lang === 'de' || lang === 'pt';
}

function capitalise(s: string): string {
  return s.length === 0 ? s : s[0]!.toUpperCase() + s.slice(1);
}

export function words(rng: Rng, lang: Lang, n: number): string {
  const list = WORDS[lang];
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(rng.pick(list));
  return out.join(NO_SPACES.has(lang) ? '' : ' ');
}

/** One sentence of roughly `minWords..maxWords` words, punctuated for its script. */
export function sentence(rng: Rng, lang: Lang, minWords: number, maxWords: number): string {
  const body = words(rng, lang, rng.int(minWords, maxWords));
  const end = lang === 'ja' ? '。' : lang === 'hi' ? '।' : lang === 'ar' ? '؟' : rng.chance(0.1) ? '!' : '.';
  return (isLatin(lang) ? capitalise(body) : body) + end;
}

/** A caption line: mostly a sentence, sometimes with a marker, quotes or a line break inside. */
export function captionText(rng: Rng, lang: Lang): string {
  const r = rng.next();
  if (r < 0.04) return rng.pick(CAPTION_MARKERS);
  let s = sentence(rng, lang, 3, 26);
  if (r < 0.1) s = `${rng.pick(CAPTION_MARKERS)} ${s}`;
  else if (r < 0.14) s = `${s}\n${sentence(rng, lang, 2, 6)}`;
  else if (r < 0.17) s = `"${s}" he said`;
  return s;
}

export function title(rng: Rng, lang: Lang): string {
  let t = capitaliseFor(lang, words(rng, lang, rng.int(2, 9)));
  if (rng.chance(0.25)) t += rng.pick(TITLE_EXTRAS);
  if (rng.chance(0.2)) t = `${rng.pick(EMOJI)} ${t}`;
  if (rng.chance(0.01)) t = t.repeat(6).slice(0, 100);
  return t;
}

function capitaliseFor(lang: Lang, s: string): string {
  return isLatin(lang) ? capitalise(s) : s;
}

/**
 * '' for about 8%, a line or two for most, and multi-paragraph text (links, hashtags, timestamps)
 * up to ~5000 characters for about 15%.
 */
export function description(rng: Rng, lang: Lang): string {
  const r = rng.next();
  if (r < 0.08) return '';
  if (r < 0.85) {
    const n = rng.int(1, 3);
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(sentence(rng, lang, 4, 18));
    return parts.join(' ');
  }
  const paragraphs: string[] = [];
  const count = rng.int(4, 30);
  for (let i = 0; i < count; i++) {
    const kind = rng.next();
    if (kind < 0.15) paragraphs.push(`🔗 ${rng.pick(SITES)}`);
    else if (kind < 0.3) {
      const m = rng.int(0, 59);
      paragraphs.push(
        `${Math.floor(m / 10)}${m % 10}:${String(rng.int(0, 59)).padStart(2, '0')} ${sentence(rng, lang, 2, 6)}`,
      );
    } else if (kind < 0.4) paragraphs.push(`#${words(rng, 'en', 1)} #${words(rng, 'en', 1)} ${rng.pick(EMOJI)}`);
    else paragraphs.push(`${sentence(rng, lang, 8, 40)} ${sentence(rng, lang, 8, 40)}`);
  }
  return paragraphs.join(rng.chance(0.5) ? '\n\n' : '\n').slice(0, 5000);
}

export function tags(rng: Rng, lang: Lang): string[] {
  const n = rng.chance(0.15) ? 0 : rng.int(1, 15);
  const out = new Set<string>();
  for (let i = 0; i < n; i++) out.add(words(rng, rng.chance(0.7) ? 'en' : lang, rng.int(1, 3)));
  return [...out];
}

export function channelName(rng: Rng): string {
  const base = capitalise(words(rng, 'en', rng.int(1, 3)));
  const r = rng.next();
  if (r < 0.1) return `${base} ${rng.pick(EMOJI)}`;
  if (r < 0.2) return `${base} ${capitalise(words(rng, rng.pick(LANGS), 1))}`;
  if (r < 0.3) return `${base} TV`;
  return base;
}
