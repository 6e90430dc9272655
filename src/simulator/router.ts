/**
 * A tiny router: `METHOD /path/{param}` templates compiled to regular expressions. The template
 * doubles as the endpoint's name in the request statistics.
 */

export interface RouteMatch<H> {
  /** `METHOD /template`, e.g. `GET /videosite/batch/{jobId}` */
  name: string;
  handler: H;
  params: Record<string, string>;
}

interface Route<H> {
  method: string;
  template: string;
  re: RegExp;
  names: string[];
  handler: H;
}

export class Router<H> {
  private readonly routes: Route<H>[] = [];

  add(method: string, template: string, handler: H): this {
    const names: string[] = [];
    const source = template
      .split(/(\{[A-Za-z]+\})/)
      .map((part) => {
        const m = /^\{([A-Za-z]+)\}$/.exec(part);
        if (m) {
          names.push(m[1]!);
          return '([^/]+)';
        }
        return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      })
      .join('');
    this.routes.push({ method, template, re: new RegExp(`^${source}/?$`), names, handler });
    return this;
  }

  /**
   * The route for a request, `'method'` when the path exists under another method only, or
   * undefined when no route has that path.
   */
  match(method: string, path: string): RouteMatch<H> | 'method' | undefined {
    let pathExists = false;
    for (const r of this.routes) {
      const m = r.re.exec(path);
      if (!m) continue;
      pathExists = true;
      if (r.method !== method) continue;
      const params: Record<string, string> = {};
      r.names.forEach((n, i) => {
        params[n] = safeDecode(m[i + 1]!);
      });
      return { name: `${r.method} ${r.template}`, handler: r.handler, params };
    }
    return pathExists ? 'method' : undefined;
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
