// Readers for the engine (wasm/js/engine.js): { size, name, read(offset, view), close }.
// read() is synchronous and returns the bytes copied into `view` (0 at the end).

export function bytesReader(bytes, name = 'model.gguf') {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return {
    size: u8.length,
    name,
    read(offset, view) {
      const part = u8.subarray(offset, Math.min(u8.length, offset + view.length));
      view.set(part);
      return part.length;
    },
  };
}

// Reads that go through a JS buffer (shared wasm memory, FileReaderSync) take at most
// this much at a time: one read can be the whole model (a gigabyte and more), and a
// bounce buffer that large may not be allocatable next to the wasm memory.
const kChunkBytes = 16 << 20;

// Copies [offset, offset + view.length) into `view` through readChunk(offset, length),
// which returns a Uint8Array of at most `length` bytes (shorter only at the end).
function chunkedRead(offset, view, readChunk) {
  let done = 0;
  while (done < view.length) {
    const want = Math.min(kChunkBytes, view.length - done);
    const part = readChunk(offset + done, want);
    view.set(part, done);
    done += part.length;
    if (part.length < want) break;
  }
  return done;
}

// A Blob or File inside a worker: FileReaderSync reads slices synchronously.
export function blobReader(blob, name) {
  const reader = new FileReaderSync();
  return {
    size: blob.size,
    name: name ?? blob.name ?? 'model.gguf',
    read(offset, view) {
      return chunkedRead(offset, view, (at, length) =>
        new Uint8Array(reader.readAsArrayBuffer(blob.slice(at, at + length))));
    },
  };
}

// An OPFS file opened for synchronous access (dedicated workers only).
export function syncHandleReader(handle, name) {
  return {
    size: handle.getSize(),
    name,
    read(offset, view) {
      // read() refuses views on shared memory in some engines: go through a bounce
      // buffer then, a chunk at a time.
      if (view.buffer instanceof ArrayBuffer) return handle.read(view, { at: offset });
      const tmp = new Uint8Array(Math.min(kChunkBytes, view.length));
      return chunkedRead(offset, view, (at, length) => {
        const n = handle.read(tmp.subarray(0, length), { at });
        return tmp.subarray(0, n);
      });
    },
    close() {
      handle.close();
    },
  };
}

// Node: every part of a split model ("x-00001-of-00003.gguf" brings in the others).
export async function pathReaders(path) {
  const fs = await import(/* @vite-ignore */ ['node', 'fs'].join(':'));
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(path);
  const paths = [];
  if (m && Number(m[2]) === 1) {
    const n = Number(m[3]);
    for (let i = 1; i <= n; ++i) paths.push(`${m[1]}-${String(i).padStart(5, '0')}-of-${m[3]}.gguf`);
  } else {
    paths.push(path);
  }
  return paths.map((p) => {
    let fd;
    try {
      fd = fs.openSync(p, 'r');
    } catch (e) {
      throw new Error(`cannot open model file ${p}: ${e.code ?? e.message}`);
    }
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      fs.closeSync(fd);
      throw new Error(`${p} is not a regular file`);
    }
    return {
      size: st.size,
      name: p,
      read(offset, view) {
        return fs.readSync(fd, view, 0, view.length, offset);
      },
      close() {
        fs.closeSync(fd);
      },
    };
  });
}
