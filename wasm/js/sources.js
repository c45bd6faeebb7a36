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

// A Blob or File inside a worker: FileReaderSync reads slices synchronously.
export function blobReader(blob, name) {
  const reader = new FileReaderSync();
  return {
    size: blob.size,
    name: name ?? blob.name ?? 'model.gguf',
    read(offset, view) {
      const buf = reader.readAsArrayBuffer(blob.slice(offset, offset + view.length));
      view.set(new Uint8Array(buf));
      return buf.byteLength;
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
      // buffer then.
      if (view.buffer instanceof ArrayBuffer) return handle.read(view, { at: offset });
      const tmp = new Uint8Array(view.length);
      const n = handle.read(tmp, { at: offset });
      view.set(tmp.subarray(0, n));
      return n;
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
