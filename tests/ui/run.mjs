// Runs one browser test case against a running tiny-harness:
//
//   node tests/ui/run.mjs CASE BASE_URL
//
// CASE is a module of tests/ui/cases/; BASE_URL the server, e.g. http://127.0.0.1:8080.
// Debian's chromium runs headless through playwright-core (no browser download). Screenshots
// go to $UI_ARTIFACTS (default target/ui-artifacts); a failing case leaves one of every open
// page there too. The end-to-end suite (tests/e2e/ui.rs) starts the server and runs this.

import { launch, Harness } from './support.mjs';

const [caseName, base] = process.argv.slice(2);
if (!caseName || !base) {
  console.error('usage: node tests/ui/run.mjs CASE BASE_URL');
  process.exit(2);
}

const { default: run } = await import(`./cases/${caseName}.mjs`);
const browser = await launch();
const harness = new Harness(browser, base, caseName);
let failed = false;
try {
  await run(harness);
  harness.checkNoPageErrors();
  console.log(`ui case ${caseName}: ok`);
} catch (error) {
  failed = true;
  console.error(`ui case ${caseName} failed: ${error.stack || error}`);
  await harness.shootAll('failure');
  harness.printLogs();
} finally {
  await browser.close();
}
process.exitCode = failed ? 1 : 0;
