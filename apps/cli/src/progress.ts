/** One status line on stderr, rewritten in place on a terminal and printed every few seconds otherwise. */
export class Progress {
  private last = 0;
  private readonly tty = Boolean(process.stderr.isTTY);

  /** `started`: when the work began (a second phase passes the first phase's start, so its rate is the overall one). */
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly started = Date.now(),
  ) {}

  update(done: number, extra = '', force = false): void {
    const now = Date.now();
    if (!force && now - this.last < (this.tty ? 250 : 2000)) return;
    this.last = now;
    const secs = (now - this.started) / 1000;
    const rate = done / Math.max(secs, 0.001);
    const eta = rate > 0 ? Math.ceil((this.total - done) / rate) : 0;
    const pct = this.total ? Math.floor((done / this.total) * 100) : 100;
    const line = `${this.label}: ${done}/${this.total} (${pct}%) ${extra} · ${rate.toFixed(1)}/s · ${done < this.total ? `ETA ${eta}s` : `${secs.toFixed(1)}s`}`;
    if (this.tty) process.stderr.write(`\r\x1b[2K${line}`);
    else process.stderr.write(line + '\n');
  }

  finish(done: number, extra = ''): void {
    this.update(done, extra, true);
    if (this.tty) process.stderr.write('\n');
  }

  get startedAt(): number {
    return this.started;
  }

  get elapsedSeconds(): number {
    return (Date.now() - this.started) / 1000;
  }
}
