/** The web interface's entry: styles, then the app into #app. */
import './style.css';
import { render } from 'preact';
import { App } from './app.tsx';

render(<App />, document.getElementById('app')!);
