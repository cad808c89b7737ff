// Open pages of a WACZ in ReplayWeb.page (the npm package's built ui.js and sw.js) in
// headless Chromium, driven by playwright-core; print one JSON line per page.
//
// Usage: node replay.mjs SPEC.json   where SPEC is
//   {"base": "http://127.0.0.1:PORT/", "chromium": "/usr/bin/chromium",
//    "pages": {"<page url>": ["<requisite url>", ...], ...}}
// and the server at base serves embed.html (a <replay-web-page> for ?url=), ui.js,
// replay/sw.js and the WACZ.
// Each line: {"page", "frame" (the replay frame's URL), "title", "text" (the start of
// the page's visible text), "loaded": [{"url", "status"}] (what the page itself asked
// the archive for), "fetched": {"<url>": {"status", "sha256"}} (each requisite asked
// for again, unrewritten (id_), from inside the replay frame)}.
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const spec = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const browser = await chromium.launch({
  executablePath: spec.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
// A replayed URL: <replayBase>w/<collection>/[:<hash>/]<14-digit ts><modifier>/<url>
const REPLAY_URL = /\/w\/[^/]+\/(?::[0-9a-f]+\/)?\d*([a-z]*_)\/(.*)$/;
// (unref: a pending deadline must not keep node running once the pages are done)
const deadline = (ms, what) =>
  new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no replayed page after ${ms} ms`)), ms).unref());
// The replay frame (inside the component's shadow DOM) once it shows the page: its URL,
// title and text, and each requisite fetched from inside it.
async function inspect(page, requisites) {
  let frame = null;
  for (;;) {
    // Listen before looking, so a navigation between the two is not missed.
    const navigated = page.waitForEvent("framenavigated", { timeout: 5000 }).catch(() => {});
    frame = page.frames().find((f) => /\/\d{14}mp_\//.test(f.url()) && (f.url().match(REPLAY_URL) || [])[1] === "mp_");
    if (frame) {
      try {
        await frame.waitForLoadState("load");
        const ready = await frame.evaluate(() => document.readyState === "complete" && !!document.body);
        if (ready) break;
      } catch (e) {
        // the frame navigated while we looked: look again
      }
    }
    await navigated;
  }
  // Let the page's own requisites (images, fonts) finish.
  await frame.evaluate(async () => {
    await document.fonts.ready;
    await Promise.all(
      [...document.images].map((img) => (img.complete ? null : new Promise((res) => { img.onload = img.onerror = res; }))),
    );
  });
  const url = frame.url();
  const title = await frame.title();
  const text = (await frame.evaluate(() => document.body.innerText)).slice(0, 200);
  const prefix = url.replace(/mp_\/.*$/, "id_/");
  const fetched = await frame.evaluate(async ({ prefix, requisites }) => {
    const out = {};
    for (const url of requisites) {
      const resp = await fetch(prefix + url);
      const body = await resp.arrayBuffer();
      const hash = await crypto.subtle.digest("SHA-256", body);
      out[url] = {
        status: resp.status,
        sha256: [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0")).join(""),
      };
    }
    return out;
  }, { prefix, requisites });
  return { frame: url, title, text, fetched };
}

try {
  const context = await browser.newContext();
  context.setDefaultTimeout(60000); // a loaded CI machine is slow; the test has its own limit
  for (const [pageUrl, requisites] of Object.entries(spec.pages)) {
    const page = await context.newPage();
    const loaded = [];
    // Responses the service worker gave the replay frame: "<prefix><ts>mp_/<url>".
    page.on("response", (r) => {
      const m = r.url().match(REPLAY_URL);
      if (m) loaded.push({ url: m[2], status: r.status() });
    });
    await page.goto(`${spec.base}embed.html?url=${encodeURIComponent(pageUrl)}`);
    // The replay frame may still navigate after it first loads (ReplayWeb.page redirects
    // a URL without a timestamp, and may load it again): whatever fails because the
    // frame went away is tried again, up to three times.
    let result = null;
    const errors = [];
    for (let attempt = 0; attempt < 3 && result === null; attempt++) {
      try {
        result = await Promise.race([inspect(page, requisites), deadline(60000, pageUrl)]);
      } catch (e) {
        errors.push(String(e).split("\n")[0]);
        if (String(e).includes("no replayed page")) {
          // say where it was: the frames, and what the innermost one shows
          const frames = page.frames();
          const last = frames[frames.length - 1];
          const shows = await last.evaluate(() => document.body && document.body.innerText).catch(() => "?");
          errors.push(`frames: ${frames.map((f) => f.url()).join(" | ")}; it shows: ${String(shows).slice(0, 300)}`);
          break;
        }
      }
    }
    if (result === null) throw new Error(`${pageUrl}: ${errors.join("; ")}`);
    const { frame, title, text, fetched } = result;
    console.log(JSON.stringify({ page: pageUrl, frame, title, text, loaded, fetched }));
    await page.close();
  }
} finally {
  await browser.close();
}
