// Stop sequences over streamed text: text that could still be the start of a stop
// string is held back, so a stop string is never emitted, even split across tokens.
export class StopMatcher {
  constructor(stops) {
    this.stops = (stops ?? []).filter((s) => typeof s === 'string' && s.length > 0);
    this.pending = '';
    this.stopped = false;
  }

  // Returns the text that is safe to emit now.
  push(piece) {
    if (this.stopped) return '';
    this.pending += piece;
    let cut = -1;
    for (const s of this.stops) {
      const at = this.pending.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.stopped = true;
      const out = this.pending.slice(0, cut);
      this.pending = '';
      return out;
    }
    // Hold back the longest tail that is a prefix of some stop string.
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, this.pending.length); k > hold; --k) {
        if (this.pending.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    const out = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    return out;
  }

  // The held-back text once generation has ended without a stop string.
  flush() {
    const out = this.stopped ? '' : this.pending;
    this.pending = '';
    return out;
  }
}
