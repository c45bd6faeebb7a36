// Headless Chromium through playwright-core (Debian's /usr/bin/chromium; no browser
// download), with the flags ../shared/TOOLCHAIN.md lists for these machines.
import { chromium } from 'playwright-core';

export async function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--enable-features=SharedArrayBuffer'],
  });
}

// A browser with an on-disk profile: incognito contexts (launch() + newContext) keep
// OPFS in memory with a small quota, too small for 1B-shaped models.
export async function launchPersistentChromium(userDataDir) {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}
