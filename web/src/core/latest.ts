/**
 * Tickets for requests whose answers must not be applied out of order: a view that fetches
 * on every input (a step slider, then a typed query) keeps only the newest request's
 * answer, so an older one that arrives later cannot overwrite it.
 */
export class Latest {
  private issued = 0;

  /** A ticket for a new request (it makes every earlier ticket stale). */
  next(): number {
    this.issued += 1;
    return this.issued;
  }

  /** Whether `ticket` is still the newest. */
  current(ticket: number): boolean {
    return ticket === this.issued;
  }
}
