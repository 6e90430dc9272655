/**
 * Subtitle files read back by parsers from npm, not by this project's code: SRT by srt-validator
 * (strict: its errors list what a SubRip reader would stumble on; its parser gives times in ms),
 * WebVTT by webvtt-parser (the W3C's parser and validator, given the full table of character
 * references so that `&amp;` decodes as the specification says).
 */
import { createRequire } from 'node:module';
import { parser as srtParser, validator as srtValidator } from 'srt-validator';
import webvtt, { type WebVTTNode } from 'webvtt-parser';

/** A cue as a reader sees it: times in ms, text decoded. */
export interface ReadCue {
  startMs: number;
  endMs: number;
  text: string;
}

export interface ReadFile {
  cues: ReadCue[];
  /** what the validator objected to (empty for a valid file) */
  errors: string[];
}

const entities = createRequire(import.meta.url)('webvtt-parser/html-entities.json') as Record<string, string>;

export function readSrt(text: string): ReadFile {
  const errors = srtValidator(text).map(
    (e) => `${e.message} (line ${String((e as { lineNumber?: number }).lineNumber)})`,
  );
  if (errors.length > 0) return { cues: [], errors };
  const cues = srtParser.parse(text).map((c) => ({ startMs: c.time.start, endMs: c.time.end, text: c.text }));
  return { cues, errors };
}

function textOf(node: WebVTTNode): string {
  return node.type === 'text' ? (node.value ?? '') : (node.children ?? []).map(textOf).join('');
}

export function readVtt(text: string): ReadFile {
  const tree = new webvtt.WebVTTParser(entities).parse(text, 'metadata');
  return {
    cues: tree.cues.map((c) => ({
      startMs: Math.round(c.startTime * 1000),
      endMs: Math.round(c.endTime * 1000),
      text: textOf(c.tree),
    })),
    errors: tree.errors.map((e) => `${e.message} (line ${e.line})`),
  };
}
