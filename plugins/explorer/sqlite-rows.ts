/**
 * Rows inserted many to a statement: `INSERT ... VALUES (?, ...), (?, ...), ...` of ROWS rows, the rest of a
 * list one by one. Each statement call crosses into the driver and steps a statement (about 1 µs beside the
 * row's own B-tree work): in statements of 64 rows an entry of the `tx` table cost 2.2-2.3 µs of CPU against
 * 3.2-3.4 µs one at a time (200,000 rows, better-sqlite3 12, SQLite 3.53).
 */
import type Database from 'better-sqlite3';

const ROWS = 64;

export class RowInserter<T> {
  private readonly many: Database.Statement;
  private readonly one: Database.Statement;
  private readonly args: unknown[] = [];

  /**
   * `head`: the statement up to VALUES (`INSERT OR IGNORE INTO tx`); `row`: one row's values (`(?, ?, ?)`,
   * SQL functions allowed); `push` appends a row's values to the arguments, in that order.
   */
  constructor(
    db: Database.Database,
    head: string,
    row: string,
    private readonly push: (args: unknown[], r: T) => void,
  ) {
    this.many = db.prepare(`${head} VALUES ${Array(ROWS).fill(row).join(', ')}`);
    this.one = db.prepare(`${head} VALUES ${row}`);
  }

  /** Insert `rows` in their order (the caller sorts them in the table's key order). */
  insert(rows: readonly T[]): void {
    const args = this.args;
    let i = 0;
    for (; i + ROWS <= rows.length; i += ROWS) {
      args.length = 0;
      for (let j = i; j < i + ROWS; j++) this.push(args, rows[j]);
      this.many.run(args);
    }
    for (; i < rows.length; i++) {
      args.length = 0;
      this.push(args, rows[i]);
      this.one.run(args);
    }
    args.length = 0;
  }
}
