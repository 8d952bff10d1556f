// main.js — starts the page: who we are (whoami), the sign-in control, the
// routes, and the live stream; signing in as someone else redoes all three.

import { getJson } from './api.js';
import { onCredentialsChange } from './credentials.js';
import { refreshIdentity, renderSignIn } from './identity.js';
import { LiveStream } from './live.js';
import { clearNotice, mountNotice, showError } from './notice.js';
import { startRouter } from './router.js';
import { TOPICS, latestOf, publish } from './store.js';
import { mountAppPage } from './views/app-page.js';
import { mountNodePage } from './views/node-page.js';
import { mountOverview } from './views/overview.js';
import { mountProjectPage } from './views/project-page.js';

const ROUTES = [
  [/^#\/?$/, mountOverview],
  [/^#\/app\/([^/]+)$/, mountAppPage],
  [/^#\/node\/([^/]+)$/, mountNodePage],
  [/^#\/project\/([^/]+)$/, mountProjectPage],
];

mountNotice(document.getElementById('notice'));
const signIn = document.getElementById('signin');

/** While the stream cannot be opened, each topic never received is read
 *  once with its GET endpoint, so the page is not empty. No polling. */
const snapshotTried = new Set();
function readMissingTopics() {
  for (const [topic, path] of Object.entries(TOPICS)) {
    if (latestOf(topic) !== undefined || snapshotTried.has(topic)) continue;
    snapshotTried.add(topic);
    getJson(path).then((body) => {
      if (latestOf(topic) === undefined) publish(topic, body);
    }).catch(() => {});
  }
}

const live = new LiveStream(document.getElementById('live'), {
  onRefused: (error) => showError(error, 'receive live updates'),
  onDown: readMissingTopics,
});

await refreshIdentity();
renderSignIn(signIn);
const router = startRouter(document.getElementById('view'), ROUTES);
live.start();

onCredentialsChange(async () => {
  clearNotice();
  snapshotTried.clear();
  await refreshIdentity();
  renderSignIn(signIn);
  router.refresh();
  live.start();
});
