// A vitest reporter for the fault suite's lanes (scripts/test-faults.mjs): beside the default
// reporter, it writes what the suite's one summary needs to the JSON file FAULTS_REPORT_FILE
// names: each file's state and seconds, each test's state, and each failure's message, expected
// and received values as vitest's own assertion error carries them (no parsing of text output).
// A file whose hooks failed (its rig did not start) is reported with those errors, and errors
// outside any test (unhandled rejections) with the run.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The fields of a vitest TestError the summary prints; the stack is left to the lane's output. */
function errorOf(e, root) {
  const out = { message: String(e?.message ?? e) };
  if (e?.name) out.name = e.name;
  if (e?.expected !== undefined) out.expected = e.expected;
  if (e?.actual !== undefined) out.actual = e.actual;
  // the test's own line: the first stack frame in a test file
  const at = String(e?.stack ?? '')
    .split('\n')
    .find((l) => l.includes('/test/faults/'));
  if (at)
    out.at = at
      .trim()
      .replace(/^at\s+/, '')
      .replace(`${root}/`, '');
  return out;
}

export default class FaultLaneReporter {
  onInit(vitest) {
    this.root = vitest.config.root;
    this.ended = [];
  }

  /** One file as the summary reads it. */
  fileOf(m) {
    const tests = [...m.children.allTests()].map((t) => {
      const r = t.result();
      return {
        name: t.fullName,
        state: r.state,
        seconds: Math.round((t.diagnostic()?.duration ?? 0) / 100) / 10,
        errors: (r.errors ?? []).map((e) => errorOf(e, this.root)),
      };
    });
    return {
      file: relative(this.root, m.moduleId),
      state: m.state(),
      seconds: Math.round((m.diagnostic().duration ?? 0) / 1000),
      errors: [...m.errors(), ...[...m.children.allSuites()].flatMap((s) => s.errors())].map((e) =>
        errorOf(e, this.root),
      ),
      tests,
    };
  }

  write(report) {
    const file = process.env.FAULTS_REPORT_FILE;
    if (file) writeFileSync(file, JSON.stringify(report, null, 2));
  }

  // written after each file too: a lane interrupted or killed still reports the files it finished
  onTestModuleEnd(m) {
    this.ended.push(this.fileOf(m));
    this.write({ reason: 'running', files: this.ended, unhandledErrors: [] });
  }

  onTestRunEnd(testModules, unhandledErrors, reason) {
    this.write({
      reason,
      files: testModules.map((m) => this.fileOf(m)),
      unhandledErrors: unhandledErrors.map((e) => errorOf(e, this.root)),
    });
  }
}
