// The OPFS model cache. A model downloaded from a URL lives in the origin private file
// system as <key>.gguf next to <key>.json, its record:
//   { url, size, sha256?, etag?, complete, savedAt }
// A download streams into the .gguf with progress, resumes with a Range request after
// an interruption (the record says how far it got), and checks the size (and sha256
// when given) before the record says complete; only complete models are ever loaded,
// and a later load of the same URL makes no request for the weights.
import { Sha256 } from './sha256.js';

const DIR = 'runnel-models';

async function cacheDir() {
  if (!globalThis.navigator?.storage?.getDirectory) {
    throw new Error('this browser has no Origin Private File System (navigator.storage.getDirectory)');
  }
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(DIR, { create: true });
}

// A stable file name for a URL.
export async function cacheKey(url) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(url));
  return Array.from(new Uint8Array(digest).slice(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function readRecord(dir, key) {
  try {
    const file = await (await dir.getFileHandle(`${key}.json`)).getFile();
    return JSON.parse(await file.text());
  } catch {
    return null;
  }
}

async function writeRecord(dir, key, record) {
  const handle = await dir.getFileHandle(`${key}.json`, { create: true });
  const w = await handle.createWritable();
  await w.write(JSON.stringify(record));
  await w.close();
}

// Every cached model: [{ url, size, complete, bytesOnDisk, savedAt, key }].
export async function listCachedModels() {
  const dir = await cacheDir();
  const out = [];
  for await (const [name, handle] of dir.entries()) {
    if (!name.endsWith('.json') || handle.kind !== 'file') continue;
    const key = name.slice(0, -5);
    const record = await readRecord(dir, key);
    if (!record) continue;
    let bytesOnDisk = 0;
    try {
      bytesOnDisk = (await (await dir.getFileHandle(`${key}.gguf`)).getFile()).size;
    } catch {
      // no data file yet
    }
    out.push({ ...record, key, bytesOnDisk });
  }
  return out;
}

export async function deleteCachedModel(url) {
  const dir = await cacheDir();
  const key = await cacheKey(url);
  let removed = false;
  for (const name of [`${key}.gguf`, `${key}.json`]) {
    try {
      await dir.removeEntry(name);
      removed = true;
    } catch {
      // already gone
    }
  }
  return removed;
}

// { usage, quota, persisted } of the origin's storage.
export async function storageInfo() {
  const est = (await navigator.storage?.estimate?.()) ?? {};
  const persisted = (await navigator.storage?.persisted?.()) ?? false;
  return { usage: est.usage ?? 0, quota: est.quota ?? 0, persisted };
}

function quotaError(e, needed) {
  return new Error(
    `not enough storage for the model: ${needed} bytes needed (${e.name}: ${e.message}); ` +
      'free space or delete cached models (listCachedModels / deleteCachedModel)',
  );
}

// Downloads `url` into the cache unless a complete copy is there; returns the cache
// key. Must run in a dedicated worker (it writes through a sync access handle).
// onProgress({ phase: 'download', loaded, total, cached }).
export async function ensureCached(url, { sha256, onProgress, signal, fetchImpl = fetch } = {}) {
  const dir = await cacheDir();
  const key = await cacheKey(url);
  let record = await readRecord(dir, key);
  if (record?.complete && record.url === url) {
    let size = -1;
    try {
      size = (await (await dir.getFileHandle(`${key}.gguf`)).getFile()).size;
    } catch {
      // the data file vanished: download again
    }
    if (size === record.size && (!sha256 || record.sha256 === sha256.toLowerCase())) {
      onProgress?.({ phase: 'download', loaded: size, total: size, cached: true });
      return key;
    }
    record = null;
  }
  await navigator.storage?.persist?.().catch(() => false);

  const fileHandle = await dir.getFileHandle(`${key}.gguf`, { create: true });
  const access = await fileHandle.createSyncAccessHandle();
  try {
    // Resume when the record matches this URL and what is on disk.
    let have = access.getSize();
    if (!record || record.url !== url || record.complete || have === 0) {
      access.truncate(0);
      have = 0;
    }
    const headers = {};
    if (have > 0) {
      headers.Range = `bytes=${have}-`;
      if (record.etag) headers['If-Range'] = record.etag;
    }
    const response = await fetchImpl(url, { headers, signal });
    if (!response.ok) throw new Error(`download of ${url} failed: HTTP ${response.status} ${response.statusText}`);
    let total;
    if (response.status === 206) {
      const range = /bytes (\d+)-(\d+)\/(\d+)/.exec(response.headers.get('Content-Range') ?? '');
      if (!range || Number(range[1]) !== have) {
        throw new Error(`download of ${url}: the server answered the resume with an unexpected range`);
      }
      total = Number(range[3]);
    } else {
      // A full answer (no range support, or the file changed): start over.
      access.truncate(0);
      have = 0;
      total = Number(response.headers.get('Content-Length') ?? 0);
    }
    record = {
      url,
      size: total,
      etag: response.headers.get('ETag') ?? undefined,
      complete: false,
      savedAt: Date.now(),
    };
    await writeRecord(dir, key, record);

    // sha256 covers the whole file: re-hash what was on disk before resuming.
    const hash = sha256 ? new Sha256() : null;
    if (hash && have > 0) {
      const chunk = new Uint8Array(8 << 20);
      for (let at = 0; at < have; at += chunk.length) {
        const n = access.read(chunk.subarray(0, Math.min(chunk.length, have - at)), { at });
        hash.update(chunk.subarray(0, n));
      }
    }
    let loaded = have;
    onProgress?.({ phase: 'download', loaded, total, cached: false, resumed: have > 0 });
    const reader = response.body.getReader();
    let lastReport = 0;
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      try {
        let off = 0;
        while (off < value.length) off += access.write(value.subarray(off), { at: loaded + off });
      } catch (e) {
        if (e.name === 'QuotaExceededError') {
          access.truncate(0);
          record.complete = false;
          await writeRecord(dir, key, record);
          throw quotaError(e, total);
        }
        throw e;
      }
      hash?.update(value);
      loaded += value.length;
      const now = Date.now();
      if (now - lastReport > 100) {
        lastReport = now;
        onProgress?.({ phase: 'download', loaded, total, cached: false });
      }
    }
    access.flush();
    if (total > 0 && loaded !== total) {
      throw new Error(`download of ${url} ended at ${loaded} of ${total} bytes; it resumes on the next load`);
    }
    if (hash) {
      const got = hash.hex();
      if (got !== sha256.toLowerCase()) {
        access.truncate(0);
        throw new Error(`download of ${url}: sha256 ${got} does not match the expected ${sha256}`);
      }
      record.sha256 = got;
    }
    record.size = loaded;
    record.complete = true;
    record.savedAt = Date.now();
    onProgress?.({ phase: 'download', loaded, total: loaded, cached: false });
    await writeRecord(dir, key, record);
    return key;
  } finally {
    access.close();
  }
}

// Opens a cached model for reading (worker only): { access } a sync access handle, or
// { file } when another tab holds the handle (a File snapshot, read with
// FileReaderSync: the same bytes, without the lock).
export async function openCached(key) {
  const dir = await cacheDir();
  const handle = await dir.getFileHandle(`${key}.gguf`);
  try {
    return { access: await handle.createSyncAccessHandle() };
  } catch (e) {
    if (e.name !== 'NoModificationAllowedError' && e.name !== 'InvalidStateError') throw e;
    return { file: await handle.getFile() };
  }
}
