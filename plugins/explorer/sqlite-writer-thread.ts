/**
 * The SQLite store's writer thread (node:worker_threads): owns the index's write connection (`SqliteWriter`)
 * and works through the store's requests in order (`writer-loop.ts`: group commit, answers, failures). The
 * node's thread meanwhile fetches and parses the next blocks, and answers reads from its own connection
 * (WAL: a reader sees the last commit, never half a run).
 */
import { workerData } from 'node:worker_threads';
import { SqliteWriter, type WriterOptions } from './sqlite-writer.ts';
import { serveWriter } from './writer-loop.ts';
import type { WriterBase } from './writer-thread.ts';

export interface WriterData extends WriterBase, WriterOptions {
  file: string;
}

const data = workerData as WriterData;
serveWriter(() => new SqliteWriter(data.file, data));
