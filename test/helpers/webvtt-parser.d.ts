/** The few names of webvtt-parser (the W3C's WebVTT parser and validator, CommonJS, untyped) the tests use. */
declare module 'webvtt-parser' {
  export interface WebVTTNode {
    type?: string;
    value?: string;
    children?: WebVTTNode[];
  }
  export interface WebVTTCue {
    id: string;
    /** seconds */
    startTime: number;
    /** seconds */
    endTime: number;
    /** as written, character references not decoded */
    text: string;
    tree: WebVTTNode;
  }
  export interface WebVTTError {
    message: string;
    line: number;
    col?: number;
  }
  export class WebVTTParser {
    constructor(entities?: Record<string, string>);
    parse(input: string, mode?: 'metadata' | 'chapters'): { cues: WebVTTCue[]; errors: WebVTTError[] };
  }
  const webvtt: { WebVTTParser: typeof WebVTTParser };
  export default webvtt;
}
