/** The web interface's entry: styles, then the app into #app. */
import './style.css';
import { render } from 'preact';
import { App } from './app.tsx';

const root = document.getElementById('app')!;
// The index's loading line is painted before this script runs; the app replaces it.
root.textContent = '';
render(<App />, root);
