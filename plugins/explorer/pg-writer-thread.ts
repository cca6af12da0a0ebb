/**
 * The PostgreSQL store's writer thread (node:worker_threads): owns the store's write connection
 * (`PgWriter`) and works through the store's requests in order (`writer-loop.ts`: group commit, answers,
 * failures). The node's thread meanwhile fetches and parses the next blocks, and answers reads from its
 * own pool.
 */
import { workerData } from 'node:worker_threads';
import { PgWriter, type PgWriterOptions } from './pg-writer.ts';
import { serveWriter } from './writer-loop.ts';
import type { WriterBase } from './writer-thread.ts';

export type PgWriterData = WriterBase & PgWriterOptions;

const data = workerData as PgWriterData;
serveWriter(() => new PgWriter(data));
