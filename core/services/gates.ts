/** Named conditions a route can wait on (`gate:` in a manifest): 503 until the condition holds. */
export class Gates {
  private readonly open = new Set<string>();

  set(name: string, holds: boolean): void {
    if (holds) this.open.add(name);
    else this.open.delete(name);
  }

  holds(name: string): boolean {
    return this.open.has(name);
  }
}
