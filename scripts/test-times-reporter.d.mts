/** Types of scripts/test-times-reporter.mjs (test/bench/test-times-reporter.test.ts feeds it events). */
export interface TestEvent {
  type: string;
  data?: { file?: string; name?: string; nesting?: number; details?: { type?: string } };
}
/** One JSON line per test file, longest first. */
export default function fileTimes(source: AsyncIterable<TestEvent>): AsyncGenerator<string>;
