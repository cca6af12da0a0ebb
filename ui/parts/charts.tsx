/**
 * A component's CPU, memory and network over the last hour, from the monitor's stored samples
 * (`/apps/appmonitor/<component>`, read every 30 s), drawn with uPlot on canvas. A canvas says nothing to a
 * screen reader, so each chart is an image with a label and the newest value is written beside it as text.
 * Loaded by a dynamic import with the charts: uPlot weighs on no other page.
 */
import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';
import { useApi } from '../live.ts';

interface Sample {
  timestamp: number;
  data: { cpu: number | null; memory: number; memoryLimit: number; netRx: number; netTx: number; running: boolean };
}

const MB = 1024 * 1024;

function Chart({ title, unit, x, series }: { title: string; unit: string; x: number[]; series: { label: string; values: (number | null)[]; stroke: string }[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    const width = Math.max(200, el.clientWidth);
    const opts: uPlot.Options = {
      width,
      height: 160,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: true } },
      axes: [{ stroke: 'currentColor' }, { stroke: 'currentColor', size: 80, values: (_u, v) => v.map((n) => `${+n.toFixed(2)} ${unit}`) }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2 }))],
    };
    const d: uPlot.AlignedData = [x.map((t) => t / 1000), ...series.map((s) => s.values)];
    if (plot.current) plot.current.setData(d);
    else plot.current = new uPlot(opts, d, el);
  }, [x, series]);
  useEffect(() => () => plot.current?.destroy(), []);
  const newest = series.map((s) => `${s.label} ${s.values.length ? (s.values[s.values.length - 1] ?? 0).toFixed(2) : '–'} ${unit}`).join(', ');
  return (
    <figure class="chart">
      <figcaption>
        {title}: <span data-chart-now={title}>{newest}</span>
      </figcaption>
      <div ref={box} role="img" aria-label={`${title} over the last hour; now ${newest}`} />
    </figure>
  );
}

export default function Charts({ target }: { target: string }) {
  const got = useApi<Sample[]>(`/apps/appmonitor/${encodeURIComponent(target)}`, 30_000);
  if (got.error) return <p class="bad">Charts not available: {got.error.message}</p>;
  const s = got.data;
  if (!s) return <p class="muted">Loading…</p>;
  if (s.length < 2) return <p class="muted">Not enough samples yet.</p>;
  const x = s.map((p) => p.timestamp);
  // Network counters are totals since the container started: the chart shows the rate between samples.
  const rate = (k: 'netRx' | 'netTx') => s.map((p, i) => (i === 0 ? null : Math.max(0, (p.data[k] - s[i - 1].data[k]) / ((p.timestamp - s[i - 1].timestamp) / 1000) / 1024)));
  return (
    <div class="charts" data-charts={target}>
      <Chart title="CPU" unit="cores" x={x} series={[{ label: 'used', values: s.map((p) => p.data.cpu), stroke: '#2f81f7' }]} />
      <Chart title="Memory" unit="MB" x={x} series={[{ label: 'used', values: s.map((p) => p.data.memory / MB), stroke: '#8957e5' }]} />
      <Chart
        title="Network"
        unit="KB/s"
        x={x}
        series={[
          { label: 'in', values: rate('netRx'), stroke: '#1a7f37' },
          { label: 'out', values: rate('netTx'), stroke: '#d1242f' },
        ]}
      />
    </div>
  );
}
