/** An address in the node's own index: its balance, unspent outputs and transactions (amounts in coins). */
import { useState } from 'preact/hooks';
import { Part, Section } from '../parts/show.tsx';
import { useApi } from '../live.ts';
import { Table } from '../parts/table.tsx';

interface Utxo {
  txid: string;
  vout: number;
  height: number;
  satoshis: number;
  confirmations?: number;
}

const coins = (sat: number) => (sat / 1e8).toFixed(8);

export default function ExplorerPage() {
  const [input, setInput] = useState('');
  const [address, setAddress] = useState<string | null>(null);
  const q = address ? encodeURIComponent(address) : null;
  const balance = useApi<number>(q && `/explorer/balance?address=${q}`);
  const utxos = useApi<Utxo[]>(q && `/explorer/utxo?address=${q}`);
  const txs = useApi<{ transactions: { txid: string; height: number }[]; next?: string }>(q && `/explorer/transactions?address=${q}`);
  return (
    <>
      <h1>Explorer</h1>
      <form
        class="card"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setAddress(input.trim() || null);
        }}
      >
        <label for="explorer-address">Address</label>
        <input id="explorer-address" required autocomplete="off" spellcheck={false} value={input} onInput={(e) => setInput((e.target as HTMLInputElement).value)} />
        <div class="buttons">
          <button class="primary" type="submit">
            Look up
          </button>
        </div>
      </form>
      {address && (
        <div class="grid" key={address}>
          <Section title="Balance" id="ex-balance">
            <Part of={balance}>{(b) => <p data-field="balance">{coins(b)} coins</p>}</Part>
          </Section>
          <Section title="Unspent outputs" id="ex-utxo">
            <Part of={utxos}>
              {(list) =>
                list.length === 0 ? (
                  <p class="muted">None.</p>
                ) : (
                  <Table label="Unspent outputs" columns={['Output', 'Height', 'Amount']}>
                    {list.map((u) => (
                      <tr key={`${u.txid}:${u.vout}`} data-utxo>
                        <td class="phrase">
                          {u.txid}:{u.vout}
                        </td>
                        <td>{u.height}</td>
                        <td>{coins(u.satoshis)}</td>
                      </tr>
                    ))}
                  </Table>
                )
              }
            </Part>
          </Section>
          <Section title="Transactions" id="ex-txs">
            <Part of={txs}>
              {(t) =>
                t.transactions.length === 0 ? (
                  <p class="muted">None.</p>
                ) : (
                  <Table label="Transactions" columns={['Transaction', 'Height']}>
                    {t.transactions.map((x) => (
                      <tr key={x.txid} data-tx>
                        <td class="phrase">{x.txid}</td>
                        <td>{x.height}</td>
                      </tr>
                    ))}
                  </Table>
                )
              }
            </Part>
          </Section>
        </div>
      )}
    </>
  );
}
