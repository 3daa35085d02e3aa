'use strict';

// ---- State: what the page knows, in memory only ---------------------------------------

const state = {
  view: 'memos',      // memos | memo | edit | history | trash | inbox | conflicts | conflict | devices | network
  status: null,       // GET /api/status
  list: null,         // GET /api/memos
  results: null,      // POST /api/search, or null for the whole list
  query: '',
  tag: '',
  memo: null,         // GET /api/memos/{id}
  opening: null,      // the id of the memo being opened, until it is loaded
  draft: null,        // the editor's fields while editing
  inbox: null,
  conflicts: null,
  conflict: null,     // {entry, copy, a, b, diff}
  history: null,      // GET /api/memos/{id}/history
  diff: null,         // POST /api/memos/{id}/diff
  trash: null,        // GET /api/trash
  peers: null,
  consent: null,
  sync: null,         // GET /api/sync
  hidden: false,      // the privacy screen is up
  dialog: null,       // the open dialog's description, so it can be hidden and restored
  signedOut: false,
  sessionLocked: false, // a lock suspended this page's session: only the unlock form
};

const $ = (id) => document.getElementById(id);

/// Whether a terminal would act on this character rather than draw it: C0 and C1 controls,
/// DEL, the bidirectional marks, embeddings, overrides and isolates, the line and paragraph
/// separators. The same set as TerminalText.isUnsafe (MemoCore), so the page and the
/// terminal show a hostile title alike.
function isUnsafe(code) {
  return code <= 0x1f || (code >= 0x7f && code <= 0x9f) || code === 0x061c || code === 0x200e ||
    code === 0x200f || code === 0x2028 || code === 0x2029 || (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069);
}

/// `\x1b` below U+0100, `\u{202e}` above: TerminalText.escape's spelling.
function escapeCharacter(code) {
  return code < 0x100 ? '\\x' + code.toString(16).padStart(2, '0') : '\\u{' + code.toString(16).padStart(4, '0') + '}';
}

/// `text` with each unsafe character escaped; with `doubling`, each backslash doubled too.
function escaped(text, doubling) {
  let out = '';
  for (const c of text) {
    const code = c.codePointAt(0);
    out += isUnsafe(code) ? escapeCharacter(code) : doubling && c === '\\' ? '\\\\' : c;
  }
  return out;
}

/// Text from elsewhere as TerminalText.display shows it on a terminal: every unsafe
/// character escaped (and then each backslash doubled, so an escape cannot be forged), and
/// ` [escaped]` after it. A right-to-left override in a synced title is then seen, never
/// obeyed. Text with nothing to escape is shown as it is. Only ever a text node's content.
function shown(text) {
  const value = String(text);
  for (const c of value) {
    if (isUnsafe(c.codePointAt(0))) return escaped(value, true) + ' [escaped]';
  }
  return value;
}

/// Text that came from elsewhere (a title, a tag, a device's or a user's name), escaped as
/// on the terminal (`shown`) and isolated from what surrounds it: whatever it holds cannot
/// turn the sentence around it (`<bdi dir=auto>`, and `unicode-bidi: isolate` in app.css).
function iso(text) {
  return el('bdi', { dir: 'auto' }, shown(text));
}

/// The same for places that take plain text only (an <option>): first-strong isolate … pop.
function isoText(text) {
  return '\u2068' + shown(text) + '\u2069';
}

/// Controls in a server message shown escaped, as the terminal does, so a name quoted in an
/// error cannot reorder the message.
function visible(text) {
  return escaped(String(text), false);
}

/// An element with attributes and children; text children become text nodes, so memo
/// text can never become markup.
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === 'onclick' || name === 'onsubmit' || name === 'oninput' || name === 'onchange') {
      node.addEventListener(name.slice(2), value);
    } else if (name === 'className') {
      node.className = value;
    } else if (name === 'value') {
      node.value = value;
    } else if (name === 'checked') {
      node.checked = Boolean(value);
    } else {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// ---- The API ----------------------------------------------------------------------------

class APIError extends Error {
  constructor(status, detail) {
    super(detail?.message || `the server answered ${status}`);
    this.status = status;
    this.code = detail?.code || 'http-' + status;
    this.hint = detail?.hint || null;
  }
}

// Counts the page's sessions: an unlock on the page gives it a new cookie, and a request sent
// with the old one (the second's poll, racing the unlock) must not lock the page again.
let sessionEpoch = 0;

async function api(method, path, body, rawType) {
  const epoch = sessionEpoch;
  const init = { method, headers: {}, credentials: 'same-origin', cache: 'no-store', redirect: 'error' };
  if (body !== undefined) {
    init.headers['Content-Type'] = rawType || 'application/json';
    init.body = rawType ? body : JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (response.status === 401) {
    if (epoch === sessionEpoch) {
      if (data?.error?.code === 'session-locked') sessionLocked();
      else signedOut();
    }
    throw new APIError(401, data?.error);
  }
  if (!response.ok) throw new APIError(response.status, data?.error);
  return data;
}

// ---- Messages ---------------------------------------------------------------------------

function say(text, isError = false) {
  const message = $('message');
  message.replaceChildren(text ? iso(visible(text)) : '');
  message.className = isError ? 'message error' : 'message';
  message.hidden = !text;
}

function fail(error) {
  if (error instanceof APIError && error.status === 401) return;
  if (state.sessionLocked) return;
  const text = error instanceof APIError ? error.message + (error.hint ? ` (${error.hint})` : '') : String(error);
  say(text, true);
}

// ---- Times ------------------------------------------------------------------------------

function localTime(iso) {
  if (!iso) return 'never';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '?';
  const two = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}`;
}

// ---- Loading ----------------------------------------------------------------------------

const locked = () => state.status?.protection?.state === 'locked';

/// `wait`: the call is held by the server until the node's change mark is no longer this
/// one (or its longest wait of 25 s passed), so the page hears of a change, a lock or an
/// unlock as soon as the server does, without asking over and over.
async function refreshStatus(wait) {
  const wasLocked = locked();
  const before = state.status?.changes;
  const query = typeof wait === 'string' ? '?wait=' + encodeURIComponent(wait) : '';
  state.status = await api('GET', '/api/status' + query);
  renderHeader();
  if (locked() !== wasLocked) {
    if (locked()) forgetContent();
    await refreshData();
    render();
  } else if (!locked() && before !== undefined && state.status.changes !== before) {
    await showArrivals();
  }
}

/// Something was stored since the last look (a peer's change, live sync, another tab):
/// what the page shows is loaded again, without a reload. The editor is left alone (the
/// person's text is theirs until they save; a save that crossed a change ends as a
/// conflict, as on the command line), and in the list only the results are redrawn, so
/// the search field keeps its focus and what is being typed. While the privacy screen is
/// up nothing is drawn.
async function showArrivals() {
  await refreshData();
  if (state.view === 'memo' && state.memo && !state.opening) {
    const id = state.memo.id;
    let fresh = null;
    try {
      fresh = (await api('GET', '/api/memos/' + encodeURIComponent(id))).memo;
    } catch (error) { fresh = null; }
    // The person may have opened another memo while this loaded: only the memo asked
    // for is replaced, never the one they opened since.
    if (state.view === 'memo' && state.memo?.id === id) state.memo = fresh;
  }
  if (state.view === 'inbox') await loadInbox();
  if (state.view === 'conflicts') await loadConflicts();
  if (state.view === 'memos') showResults();
  else if (state.view !== 'edit' && !(state.view === 'memo' && state.opening)) render();
}

/// Whether the editor holds text the person typed and has not saved.
function unsavedDraft() {
  captureDraft();
  const draft = state.draft;
  if (!draft) return false;
  const original = draft.original || { title: '', body: '', tags: '', private: false };
  return draft.title !== original.title || draft.body !== original.body || draft.tags !== original.tags ||
    draft.private !== original.private;
}

/// Drops every memo text the page holds — the open memo and conflict, the search, the inbox,
/// the editor's draft, any dialog — and takes it out of the page at once. A locked node
/// cannot seal the draft (its key is gone), so unsaved text is dropped too: the message says
/// so first.
function forgetContent() {
  if (unsavedDraft()) {
    say('The node was locked: the memo you were editing was closed, and what you typed since the last save was ' +
      'dropped (a locked node cannot keep it sealed).', true);
  }
  state.memo = null;
  state.conflict = null;
  state.history = null;
  state.diff = null;
  state.trash = null;
  state.results = null;
  state.inbox = null;
  state.conflicts = null;
  state.draft = null;
  state.dialog = null;
  state.query = '';
  state.tag = '';
  if (['memo', 'conflict', 'edit', 'history', 'trash'].includes(state.view)) state.view = 'memos';
  $('content').replaceChildren();
  renderDialog();
}

/// A lock suspended this page's session: everything is forgotten, the list too (the server
/// answers nothing but the unlock call now), and only the unlock form is shown.
function sessionLocked() {
  if (state.sessionLocked || state.signedOut) return;
  forgetContent();
  state.sessionLocked = true;
  state.list = null;
  state.peers = null;
  state.consent = null;
  state.sync = null;
  state.status = null;
  $('sync-panel').replaceChildren();
  $('sync-panel').hidden = true;
  render();
}

async function refreshData() {
  state.list = await api('GET', '/api/memos');
  if (state.query || state.tag) await runSearch();
  await refreshCounts();
}

async function refreshCounts() {
  if (locked()) {
    state.inbox = null;
    state.conflicts = null;
  } else {
    try { state.inbox = await api('GET', '/api/inbox'); } catch (error) { state.inbox = null; }
    try { state.conflicts = await api('GET', '/api/conflicts'); } catch (error) { state.conflicts = null; }
  }
  renderHeader();
}

// Each search gets a number; an answer to an older one (overtaken while the server was
// slow) is dropped, so the list always shows the latest query's result.
let searchGeneration = 0;
/// Runs the current query; false when a newer one started meanwhile.
async function runSearch() {
  const generation = ++searchGeneration;
  if (!state.query.trim() && !state.tag) {
    state.results = null;
    return true;
  }
  const query = {};
  if (state.query.trim()) query.text = state.query;
  if (state.tag) query.tag = state.tag;
  const results = await api('POST', '/api/search', query);
  if (generation !== searchGeneration) return false;
  state.results = results;
  return true;
}

// ---- The header -------------------------------------------------------------------------

function renderHeader() {
  const badge = $('lock-state');
  const protection = state.status?.protection;
  badge.textContent = state.sessionLocked ? 'Locked' : !protection ? '' : protection.state === 'locked' ? 'Locked' :
    protection.state === 'unlocked' ? 'Unlocked' : '';
  badge.className = locked() || state.sessionLocked ? 'badge locked' : 'badge';
  $('lock-button').hidden = protection?.state !== 'unlocked';
  $('inbox-count').textContent = state.inbox?.entries?.length ? String(state.inbox.entries.length) : '';
  $('conflict-count').textContent = state.conflicts?.conflicts?.length ? String(state.conflicts.conflicts.length) : '';
  const tab = ['memo', 'edit', 'history'].includes(state.view) ? 'memos' : state.view === 'conflict' ? 'conflicts' :
    state.view;
  for (const button of document.querySelectorAll('.tab')) {
    if (button.dataset.view === tab) button.setAttribute('aria-current', 'page');
    else button.removeAttribute('aria-current');
  }
}

// ---- Views ------------------------------------------------------------------------------

function render() {
  if (state.hidden || state.signedOut) return;
  // What was typed since the editor was drawn is kept when it is drawn again.
  captureDraft();
  renderHeader();
  const content = $('content');
  if (state.sessionLocked) {
    content.replaceChildren(unlockForm(),
      el('p', { className: 'hint' }, 'The node was locked, and this page with it: memo text was taken out of the ' +
        'page. Unlock to go on, or sign in again with the link memo-peer web printed.'));
    return;
  }
  const views = {
    memos: renderMemos, memo: renderMemo, edit: renderEditor, history: renderHistory, trash: renderTrash,
    inbox: renderInbox, conflicts: renderConflicts,
    conflict: renderConflict, devices: renderDevices, network: renderNetwork,
  };
  content.replaceChildren(...[].concat((views[state.view] || renderMemos)()));
}

async function go(view, load) {
  say('');
  state.view = view;
  try {
    if (load) await load();
  } catch (error) {
    fail(error);
  }
  // Another view opened while this one loaded (a slow list, then a click on a memo and
  // Edit): that view drew itself, and drawing it again would replace the editor under the
  // person's hands.
  if (state.view === view) render();
}

/// Who signed a revision (AUTHOR of the JSON shapes): this device, a trusted device's name,
/// the start of an unknown device's ID, or a revision from before signing.
function authorName(author) {
  if (!author) return 'unsigned (before version 3)';
  if (author.this_device) return 'this device';
  return author.name || author.device_id.slice(0, 8) + '…';
}

/// "edited on laptop-b · 2026-12-01 20:08", the name isolated (it came from elsewhere).
function editedBy(author, updated) {
  return [author ? 'edited on ' : '', iso(authorName(author)), ' · ', localTime(updated)];
}

function tagList(tags) {
  return el('span', { className: 'tags' }, (tags || []).map((tag) => el('span', { className: 'tag' }, '#', iso(tag))));
}

function unlockForm() {
  return el('form', { id: 'unlock-form', className: 'unlock', autocomplete: 'off', onsubmit: unlock },
    el('p', {}, 'This node is locked: memo text stays encrypted until you unlock it. Titles of private memos and all tags are hidden.'),
    el('label', { for: 'passphrase' }, 'Passphrase'),
    el('input', { id: 'passphrase', type: 'password', name: 'passphrase', autocomplete: 'off', required: true,
      spellcheck: 'false' }),
    el('button', { type: 'submit', className: 'primary', id: 'unlock-button' }, 'Unlock'));
}

function renderMemos() {
  const parts = [];
  if (locked()) parts.push(unlockForm());
  const tags = [...new Set((state.list?.memos || []).flatMap((memo) => memo.tags || []))].sort();
  parts.push(el('div', { className: 'toolbar' },
    el('input', { id: 'search', type: 'search', placeholder: 'Search title, tags and text', autocomplete: 'off',
      'aria-label': 'Search', value: state.query, disabled: locked(), oninput: searchTyped }),
    el('select', { id: 'tag-filter', 'aria-label': 'Tag', disabled: locked(), onchange: tagChosen },
      el('option', { value: '' }, 'All tags'),
      tags.map((tag) => el('option', { value: tag, selected: tag === state.tag }, isoText('#' + tag)))),
    el('button', { id: 'new-memo', type: 'button', className: 'primary', disabled: locked(), onclick: newMemo },
      'New memo')));
  parts.push(el('div', { id: 'memo-results' }, memoResults()));
  return parts;
}

/// The list under the toolbar: redrawn alone while the person types a search, so the
/// search field keeps its focus, caret and any keystrokes typed meanwhile.
function memoResults() {
  const listed = state.results ? state.results.memos : state.list?.memos || [];
  if (!listed.length) {
    return el('p', { className: 'empty' }, state.results ? 'No memo matches.' : 'No memos yet.');
  }
  return el('ul', { className: 'list', id: 'memo-list' }, listed.map((memo) => {
    const withheld = memo.redacted?.title;
    const title = withheld ? (memo.private ? '(private, locked)' : '(locked)') : memo.title;
    return el('li', {},
      el('button', { type: 'button', className: 'item memo-item', 'data-id': memo.id, disabled: locked(),
        onclick: () => openMemo(memo.id) },
        memo.private ? el('span', { className: 'private-mark', title: 'private' }, '●') : null,
        el('span', { className: withheld ? 'title withheld' : 'title' }, withheld ? title : iso(title)),
        tagList(memo.tags),
        memo.conflict_of ? el('span', { className: 'flag' }, 'conflict copy') :
          memo.conflict ? el('span', { className: 'flag' }, 'conflict') : null,
        el('span', { className: 'spacer' }),
        el('span', { className: 'time' }, localTime(memo.updated))));
  }));
}

/// Shows a finished search: only the results, unless the page shows something else now
/// (then the whole view, which also respects the privacy screen).
function showResults() {
  const results = $('memo-results');
  if (results && state.view === 'memos' && !state.hidden && !state.signedOut) {
    results.replaceChildren(memoResults());
  } else {
    render();
  }
}

let searchTimer = null;
function searchTyped(event) {
  state.query = event.target.value;
  clearTimeout(searchTimer);
  searchTimer = setTimeout(async () => {
    try {
      if (await runSearch()) showResults();
    } catch (error) { fail(error); }
  }, 250);
}

async function tagChosen(event) {
  state.tag = event.target.value;
  try {
    if (await runSearch()) showResults();
  } catch (error) { fail(error); }
}

async function openMemo(id) {
  // Until it is loaded, the memo shown before is not the open one: an arrival meanwhile
  // must neither reload nor redraw it (showArrivals).
  state.opening = id;
  try {
    await go('memo', async () => {
      state.memo = (await api('GET', '/api/memos/' + encodeURIComponent(id))).memo;
    });
  } finally {
    if (state.opening === id) state.opening = null;
  }
}

function listed(id) {
  return state.list?.memos?.find((memo) => memo.id === id) || null;
}

function renderMemo() {
  const memo = state.memo;
  if (!memo) return [el('p', { className: 'empty' }, 'This memo is not available.')];
  const inConflict = Boolean(memo.conflict_of) || Boolean(listed(memo.id)?.conflict);
  return [el('article', { className: 'memo', id: 'memo' },
    el('h2', { id: 'memo-title' }, iso(memo.title)),
    el('p', { className: 'meta' },
      `Updated ${localTime(memo.updated)} · revision ${memo.revision}`, memo.private ? ' · private' : ''),
    el('p', { className: 'meta', id: 'memo-author' }, editedBy(memo.author, memo.updated)),
    tagList(memo.tags),
    inConflict ? el('p', { className: 'note' },
      'This memo was changed on two devices at once. Resolve the conflict before you edit or delete it. ',
      el('button', { type: 'button', onclick: () => go('conflicts', loadConflicts) }, 'Show conflicts')) : null,
    el('pre', { className: 'body', id: 'memo-body', dir: 'auto' }, memo.body || ''),
    el('div', { className: 'buttons' },
      el('button', { type: 'button', onclick: () => go('memos', refreshData) }, 'Back'),
      el('button', { type: 'button', id: 'edit-button', disabled: inConflict, onclick: () => editMemo(memo) }, 'Edit'),
      el('button', { type: 'button', id: 'history-button', onclick: () => openHistory(memo.id) }, 'History'),
      el('button', { type: 'button', id: 'private-button', disabled: inConflict, onclick: () => togglePrivate(memo) },
        memo.private ? 'Remove private mark' : 'Mark private'),
      el('button', { type: 'button', id: 'delete-button', className: 'danger', disabled: inConflict,
        onclick: () => confirmDelete(memo) }, 'Delete')))];
}

function newMemo() {
  state.draft = { id: null, title: '', body: '', tags: '', private: false, revision: null, original: null };
  go('edit');
}

function editMemo(memo) {
  const fields = { title: memo.title, body: memo.body, tags: (memo.tags || []).join(' '), private: memo.private };
  state.draft = { id: memo.id, ...fields, revision: memo.revision, original: fields };
  go('edit');
}

/// Said before it can happen: with protection `complete`, the node locks by itself after a
/// while without use, and a lock drops what was typed and not saved.
function lockWarning() {
  const protection = state.status?.protection;
  if (protection?.protection !== 'complete' || !protection.idle_timeout) return null;
  const minutes = Math.max(1, Math.round(protection.idle_timeout / 60));
  return el('p', { className: 'hint', id: 'editor-lock-warning' },
    `This node locks after ${minutes} minute${minutes === 1 ? '' : 's'} without use; text not saved by then is ` +
    'dropped (a locked node cannot keep it sealed). Save now and then.');
}

/// Reads the editor's fields back into the draft (before hiding, before saving).
function captureDraft() {
  // Only from the editor drawn for this draft: one drawn for another memo is not its text.
  if (state.view !== 'edit' || !state.draft || $('editor')?.draft !== state.draft) return;
  state.draft.title = $('editor-title').value;
  state.draft.body = $('editor-body').value;
  state.draft.tags = $('editor-tags').value;
  state.draft.private = $('editor-private').checked;
}

function renderEditor() {
  const draft = state.draft;
  if (!draft) return renderMemos();
  const form = el('form', { className: 'editor', id: 'editor', autocomplete: 'off', onsubmit: saveDraft },
    lockWarning(),
    el('label', {}, 'Title',
      el('input', { id: 'editor-title', type: 'text', dir: 'auto', value: draft.title, maxlength: 512,
        placeholder: 'Optional: the first line of the text' })),
    el('label', {}, 'Tags',
      el('input', { id: 'editor-tags', type: 'text', dir: 'auto', value: draft.tags, placeholder: 'home shopping' })),
    el('label', { className: 'inline' },
      el('input', { id: 'editor-private', type: 'checkbox', checked: draft.private }),
      'Private (hidden from the widget and lock screens)'),
    el('label', {}, 'Text', el('textarea', { id: 'editor-body', dir: 'auto', value: draft.body, spellcheck: 'true' })),
    el('div', { className: 'buttons' },
      el('button', { type: 'submit', className: 'primary', id: 'save-button' }, 'Save'),
      el('button', { type: 'button', onclick: cancelEdit }, 'Cancel')));
  form.draft = draft;
  return [form];
}

function cancelEdit() {
  const id = state.draft?.id;
  state.draft = null;
  if (id) openMemo(id);
  else go('memos', refreshData);
}

async function saveDraft(event) {
  event.preventDefault();
  captureDraft();
  const draft = state.draft;
  const tags = draft.tags.split(/[\s,]+/).filter(Boolean);
  const known = new Set((state.list?.memos || []).map((memo) => memo.id));
  try {
    let saved;
    if (draft.id) {
      saved = await api('PATCH', '/api/memos/' + encodeURIComponent(draft.id),
        { title: draft.title, body: draft.body, tags, private: draft.private, revision: draft.revision });
    } else {
      saved = await api('POST', '/api/memos', { title: draft.title, body: draft.body, tags, private: draft.private });
    }
    state.draft = null;
    say('Saved.');
    state.list = await api('GET', '/api/memos');
    state.memo = (await api('GET', '/api/memos/' + encodeURIComponent(saved.memo.id))).memo;
    state.view = 'memo';
    render();
    say('Saved.');
  } catch (error) {
    if (draft.id && error instanceof APIError && error.status === 409 && error.code === 'conflict') {
      await keptAsNewMemo(draft.id, known);
    } else {
      fail(error);
    }
  }
}

/// The memo changed elsewhere while it was being edited (a sync, another window): the server
/// kept the typed text as a memo of its own (docs/WEB.md, PATCH with `revision`). Said in the
/// page's words, not the command line's, and the new memo is opened.
async function keptAsNewMemo(original, known) {
  state.draft = null;
  try {
    state.list = await api('GET', '/api/memos');
    const fresh = (state.list.memos || []).filter((memo) => !known.has(memo.id));
    const inConflict = Boolean(listed(original)?.conflict);
    if (fresh.length === 1) {
      state.memo = (await api('GET', '/api/memos/' + encodeURIComponent(fresh[0].id))).memo;
      state.view = 'memo';
    } else {
      state.view = 'memos';
    }
    render();
    say('While you were editing, this memo was changed somewhere else (on another device, or in another ' +
      'window). Nothing is lost: your text was saved as a new memo' + (fresh.length === 1 ? ', shown here' : '') +
      ', and the memo you opened keeps the other change' +
      (inConflict ? '; it is in conflict now: see Conflicts.' : '. Copy what you need from one to the other.'), true);
  } catch (reload) {
    fail(reload);
  }
}

async function togglePrivate(memo) {
  try {
    await api('PATCH', '/api/memos/' + encodeURIComponent(memo.id), { private: !memo.private, revision: memo.revision });
    state.memo = (await api('GET', '/api/memos/' + encodeURIComponent(memo.id))).memo;
    state.list = await api('GET', '/api/memos');
    render();
    say(state.memo.private ? 'Marked private.' : 'Private mark removed.');
  } catch (error) { fail(error); }
}

/// Asks before something that cannot be undone; `run` only on the confirming click.
function confirmThen(title, line, label, run) {
  openDialog({
    title,
    lines: [line],
    buttons: [
      { label: 'Cancel', action: 'cancel' },
      { label, action: 'confirm', className: 'danger', run },
    ],
  });
}

function confirmDelete(memo) {
  confirmThen('Delete this memo?',
    ['“', iso(memo.title), '” is deleted here, and on your other devices when they sync. Its text is wiped.'],
    'Delete', () => deleteMemo(memo.id));
}

async function deleteMemo(id) {
  try {
    await api('DELETE', '/api/memos/' + encodeURIComponent(id));
    state.memo = null;
    await go('memos', refreshData);
    say('Deleted.');
  } catch (error) { fail(error); }
}

// ---- History and the trash ----------------------------------------------------------------

async function openHistory(id) {
  await go('history', async () => {
    state.diff = null;
    state.history = await api('GET', `/api/memos/${encodeURIComponent(id)}/history`);
  });
}

function renderHistory() {
  if (locked()) return [unlockForm()];
  const history = state.history;
  if (!history) return [el('p', { className: 'empty' }, 'This history is not available.')];
  const rows = [...history.revisions].reverse();
  const parts = [el('h2', {}, 'History'),
    el('p', { className: 'hint' }, 'The revisions this device kept, newest first, with the device that made each. ' +
      'Restore makes a revision’s text the memo’s again, as a new revision that syncs like an edit.'),
    el('ul', { className: 'list', id: 'history-list' }, rows.map((entry) => el('li', { 'data-revision': entry.revision },
      el('span', { className: 'title' }, `Revision ${entry.revision}`, entry.current ? ' (current) ' : ' ',
        iso(entry.deleted ? '(deleted)' : entry.first_line)),
      el('span', { className: 'meta' }, editedBy(entry.author, entry.updated),
        entry.deleted ? '' : ` · ${entry.size} bytes`),
      el('span', { className: 'buttons' },
        entry.current ? null : el('button', { type: 'button', className: 'diff-button',
          onclick: () => showDiff(history.memo, entry.revision) }, 'Changes since'),
        entry.current || entry.deleted ? null : el('button', { type: 'button', className: 'restore-button',
          onclick: () => confirmRestore(history.memo, entry.revision) }, 'Restore'))))),
  ];
  if (state.diff) parts.push(diffView(state.diff));
  parts.push(el('div', { className: 'buttons' },
    el('button', { type: 'button', onclick: () => openMemo(history.memo) }, 'Back')));
  return parts;
}

async function showDiff(id, from) {
  try {
    state.diff = await api('POST', `/api/memos/${encodeURIComponent(id)}/diff`, { from });
    render();
  } catch (error) { fail(error); }
}

/// A line diff: each line a text node in its own element, marked by its kind. `heading`
/// says what is compared (by default the two revisions' numbers).
function diffView(diff, id = 'diff', heading = `Revision ${diff.from.revision} → ${diff.to.revision}`) {
  const mark = { same: ' ', removed: '−', added: '+' };
  return el('section', { className: 'diff', id },
    el('p', { className: 'meta' }, heading),
    el('pre', { className: 'body', dir: 'auto' }, diff.lines.map((line) =>
      el('span', { className: 'diff-' + line.op }, mark[line.op] + ' ', line.text, '\n'))));
}

function confirmRestore(id, revision) {
  openDialog({
    title: `Restore revision ${revision}?`,
    lines: ['Its text becomes the memo’s again, as a new revision; the current one stays in the history.'],
    buttons: [
      { label: 'Cancel', action: 'cancel' },
      { label: 'Restore', action: 'confirm', className: 'primary', run: () => restoreRevision(id, revision) },
    ],
  });
}

async function restoreRevision(id, revision) {
  try {
    const restored = await api('POST', `/api/memos/${encodeURIComponent(id)}/restore`, { revision });
    state.list = await api('GET', '/api/memos');
    await openMemo(restored.memo.id);
    say(`Restored revision ${revision} (now revision ${restored.memo.revision}).`);
  } catch (error) { fail(error); }
}

async function loadTrash() { state.trash = await api('GET', '/api/trash'); }

function renderTrash() {
  if (locked()) return [unlockForm(), el('p', { className: 'empty' }, 'The trash can be read once the node is unlocked.')];
  const entries = state.trash?.trash || [];
  if (!entries.length) return [el('p', { className: 'empty' }, 'The trash is empty.')];
  return [el('p', { className: 'hint' }, 'Memos deleted in the last 30 days, here or on another device.'),
    el('ul', { className: 'list', id: 'trash-list' }, entries.map((entry) => el('li', { 'data-id': entry.memo },
      el('span', { className: 'title' }, iso(entry.title || '(untitled)')),
      el('span', { className: 'meta' }, entry.held_from ?
        ['a delete from ', iso(authorName(entry.held_from)), ' held back: the memo is still here'] :
        ['deleted by ', iso(authorName(entry.deleted_by)), ' · ', localTime(entry.deleted)]),
      entry.held_from ? null : el('button', { type: 'button', className: 'restore-button',
        onclick: () => restoreFromTrash(entry.memo) }, 'Restore'))))];
}

async function restoreFromTrash(id) {
  try {
    await api('POST', `/api/trash/${encodeURIComponent(id)}/restore`);
    await loadTrash();
    state.list = await api('GET', '/api/memos');
    await go('trash');
    say('Restored.');
  } catch (error) { fail(error); }
}

// ---- Inbox --------------------------------------------------------------------------------

async function loadInbox() { state.inbox = await api('GET', '/api/inbox'); }

function renderInbox() {
  if (locked()) return [unlockForm(), el('p', { className: 'empty' }, 'The inbox opens once the node is unlocked.')];
  const entries = state.inbox?.entries || [];
  if (!entries.length) return [el('p', { className: 'empty' }, 'The inbox is empty.')];
  return [el('p', { className: 'hint' }, 'Memos your trusted devices sent. Accept one to keep it as a memo.'),
    el('ul', { className: 'list', id: 'inbox-list' }, entries.map((entry) => el('li', { className: 'row inbox-item', 'data-id': entry.id },
      el('span', { className: 'title' }, iso(entry.title)),
      tagList(entry.tags),
      el('span', { className: 'time' }, 'from ', iso(entry.from), `, ${localTime(entry.received)}`),
      el('span', { className: 'spacer' }),
      el('button', { type: 'button', className: 'primary', 'data-action': 'accept', onclick: () => acceptEntry(entry.id) }, 'Accept'),
      el('button', { type: 'button', 'data-action': 'drop', onclick: () => confirmDrop(entry) }, 'Drop'))))];
}

async function acceptEntry(id) {
  try {
    await api('POST', `/api/inbox/${encodeURIComponent(id)}/accept`);
    await loadInbox();
    state.list = await api('GET', '/api/memos');
    await refreshCounts();
    render();
    say('Accepted: it is one of your memos now.');
  } catch (error) { fail(error); }
}

function confirmDrop(entry) {
  confirmThen('Drop this memo?',
    ['It is deleted from the inbox; if ', iso(entry.from), ' sends it again, it is not stored again.'],
    'Drop', () => dropEntry(entry.id));
}

async function dropEntry(id) {
  try {
    await api('POST', `/api/inbox/${encodeURIComponent(id)}/drop`);
    await loadInbox();
    await refreshCounts();
    render();
    say('Dropped.');
  } catch (error) { fail(error); }
}

// ---- Conflicts ----------------------------------------------------------------------------

async function loadConflicts() { state.conflicts = await api('GET', '/api/conflicts'); }

function renderConflicts() {
  if (locked()) return [unlockForm(), el('p', { className: 'empty' }, 'Conflicts can be resolved once the node is unlocked.')];
  const entries = state.conflicts?.conflicts || [];
  if (!entries.length) return [el('p', { className: 'empty' }, 'No conflicts.')];
  return [el('p', { className: 'hint' }, 'These memos changed on two devices at once. Both versions were kept; choose what stays.'),
    el('ul', { className: 'list', id: 'conflict-list' }, entries.map((entry) => el('li', {},
      el('button', { type: 'button', className: 'item conflict-item', 'data-id': entry.memo, onclick: () => openConflict(entry) },
        el('span', { className: 'title' }, iso(entry.title)),
        el('span', { className: 'meta' }, entry.overruled_delete ? 'deleted on another device while edited here' :
          `${entry.copies.length} other version${entry.copies.length === 1 ? '' : 's'}`)))))];
}

async function openConflict(entry) {
  await go('conflict', async () => {
    const copy = entry.copies[0] || null;
    const a = (await api('GET', '/api/memos/' + encodeURIComponent(entry.memo))).memo;
    const b = copy ? (await api('GET', '/api/memos/' + encodeURIComponent(copy.id))).memo : null;
    // The line diff from A to B, by the same diff as a memo's history (none for a delete).
    const diff = copy ?
      await api('POST', `/api/memos/${encodeURIComponent(entry.memo)}/diff`, { copy: copy.id }) : null;
    state.conflict = { entry, copy, a, b, diff };
  });
}

function version(label, memo, id) {
  return el('article', { className: 'memo', id },
    el('h3', {}, label),
    memo ? [
      el('h2', {}, iso(memo.title)),
      el('p', { className: 'meta' }, `Updated ${localTime(memo.updated)}`, memo.private ? ' · private' : ''),
      el('p', { className: 'meta author' }, 'written on ', iso(authorName(memo.author))),
      tagList(memo.tags),
      el('pre', { className: 'body', dir: 'auto' }, memo.body || ''),
    ] : el('p', { className: 'meta' }, 'Deleted on another device.'));
}

function renderConflict() {
  const conflict = state.conflict;
  if (!conflict) return renderConflicts();
  const target = conflict.copy ? conflict.copy.id : conflict.entry.memo;
  return [
    el('div', { className: 'side-by-side', id: 'conflict' },
      version('A: this memo', conflict.a, 'version-a'),
      version(conflict.b ? 'B: the other version' : 'B: the delete', conflict.b, 'version-b')),
    conflict.diff ? diffView(conflict.diff, 'conflict-diff',
      ['The lines from A (written on ', iso(authorName(conflict.diff.from.author)), ') to B (written on ',
        iso(authorName(conflict.diff.to.author)), ')']) : null,
    el('div', { className: 'buttons' },
      el('button', { type: 'button', onclick: () => go('conflicts', loadConflicts) }, 'Back'),
      el('span', { className: 'spacer' }),
      el('button', { type: 'button', id: 'keep-a', onclick: () => resolve(target, 'A') }, 'Keep A'),
      el('button', { type: 'button', id: 'keep-b', onclick: () => resolve(target, 'B') },
        conflict.b ? 'Keep B' : 'Delete it (B)'),
      conflict.b ? el('button', { type: 'button', id: 'keep-both', className: 'primary', onclick: () => resolve(target, 'both') },
        'Keep both') : null),
  ];
}

async function resolve(id, keep) {
  try {
    const result = await api('POST', `/api/conflicts/${encodeURIComponent(id)}/resolve`, { keep });
    state.conflict = null;
    await loadConflicts();
    state.list = await api('GET', '/api/memos');
    await go('conflicts');
    say(result.deleted ? 'Resolved: the memo was deleted.' :
      result.new_memos.length ? 'Resolved: both versions are memos now.' : 'Resolved.');
  } catch (error) { fail(error); }
}

// ---- Devices ------------------------------------------------------------------------------

async function loadPeers() {
  state.peers = await api('GET', '/api/peers');
  state.invitations = await api('GET', '/api/invitations');
}

/// Notebooks a trusted device shared with this one, waiting for a person: names and device
/// names came from elsewhere, so each is isolated.
function renderInvitations() {
  const invitations = state.invitations?.invitations || [];
  if (!invitations.length) return [];
  return [el('h2', {}, 'Notebooks shared with this device'),
    el('p', { className: 'hint' }, 'Nothing of a notebook moves here until you accept it. Declined ones come back only if a member shares them again.'),
    el('ul', { className: 'list', id: 'invitation-list' }, invitations.map((invitation) => el('li', { className: 'row invitation-item', 'data-id': invitation.notebook },
      el('span', { className: 'title' }, iso(invitation.name || 'notebook ' + invitation.notebook.slice(0, 8) + '…')),
      el('span', { className: 'time' }, `as ${invitation.role}, from `, iso(invitation.from.name || invitation.from.device_id.slice(0, 8) + '…'),
        invitation.invited_by && invitation.invited_by.device_id !== invitation.from.device_id
          ? [', shared by ', iso(invitation.invited_by.name || invitation.invited_by.device_id.slice(0, 8) + '…')] : [],
        `, ${localTime(invitation.received)}`),
      el('span', { className: 'spacer' }),
      el('button', { type: 'button', className: 'primary', 'data-action': 'accept', onclick: () => answerInvitation(invitation, 'accept') }, 'Accept'),
      el('button', { type: 'button', 'data-action': 'decline', onclick: () => answerInvitation(invitation, 'decline') }, 'Decline'))))];
}

async function answerInvitation(invitation, answer) {
  try {
    await api('POST', `/api/invitations/${encodeURIComponent(invitation.notebook)}/${answer}`);
    await loadPeers();
    render();
    say(answer === 'accept' ? 'Accepted: the notebook syncs from the next sync on (at once while live sync is on).' : 'Declined.');
  } catch (error) { fail(error); }
}

function renderDevices() {
  const peers = state.peers?.peers || [];
  if (!peers.length) {
    return renderInvitations().concat([el('p', { className: 'empty' }, 'No trusted devices yet. Pair one on a terminal: memo-peer pair --accept here, memo-peer pair on the other.')]);
  }
  const columns = ['Name', 'Device ID', 'Last seen', 'Last synced', 'Changes to send', 'Held deletes', 'Last refused'];
  // The last sync data this device refused from the peer, with its evidence (text only).
  const refusal = (last) => (last ? `${localTime(last.at)}: it sent ${last.what} (${last.reason}: ${last.detail})` : 'never');
  // Each cell carries its column's name: on a phone the rows become cards (app.css), each
  // cell on a line of its own after that name, so the table never needs more than the width.
  const cell = (index, content, className) => el('td', { className, 'data-label': columns[index] }, content);
  return renderInvitations().concat([el('div', { className: 'table-wrap', id: 'devices-wrap' },
    el('table', { className: 'devices', id: 'devices' },
      el('thead', {}, el('tr', {}, columns.map((name) => el('th', {}, name)))),
      el('tbody', {}, peers.map((peer) => el('tr', {},
        cell(0, iso(peer.name)),
        cell(1, peer.device_id.slice(0, 9) + '…', 'id'),
        cell(2, localTime(peer.last_seen)),
        cell(3, localTime(peer.last_synced)),
        cell(4, String(peer.pending)),
        cell(5, String(peer.held_deletes)),
        cell(6, refusal(peer.last_refusal))))))), deviceAddresses(peers)]);
}

/// Where each trusted device is dialled when DNS-SD does not show it (a home server on
/// another subnet): the addresses a person gave (each with Remove), where it was last
/// reached, where it last said it listens, and a form to give another (HOST[:PORT]). What
/// a device said came from elsewhere: every address is isolated and shown escaped.
function deviceAddresses(peers) {
  return el('section', { id: 'device-addresses' },
    el('h2', {}, 'Addresses'),
    el('p', { className: 'hint' }, 'Devices on this network are found by themselves. One on another subnet or ' +
      'VLAN can be given an address to be dialled at: an IPv4 or IPv6 address or a name, with :PORT if it is ' +
      'not the one it says it listens on.'),
    el('ul', { className: 'list' }, peers.map((peer) => {
      const addresses = peer.addresses || { given: [], reached: [], announced: null };
      const reached = addresses.reached?.[0];
      const announced = addresses.announced;
      return el('li', { className: 'row addresses', 'data-device': peer.device_id },
        el('span', { className: 'title' }, iso(peer.name)),
        el('ul', { className: 'address-lines' },
          el('li', { className: 'given' }, 'Given: ', addresses.given?.length ? null : 'none',
            (addresses.given || []).map((address) => el('span', { className: 'address', 'data-address': address },
              el('code', {}, iso(address)),
              el('button', { type: 'button', className: 'quiet remove-address', 'aria-label': 'Remove ' + address,
                onclick: () => removeAddress(peer, address) }, 'Remove')))),
          el('li', { className: 'reached' }, 'Last reached at: ', reached
            ? [el('code', {}, iso(reached.address)), ` (${localTime(reached.at)})`] : 'never'),
          el('li', { className: 'announced' }, 'Says it listens at: ', announced?.addresses?.length
            ? [announced.addresses.map((address, index) => [index ? ', ' : '', el('code', {}, iso(address))]),
              ` (${localTime(announced.at)})`] : 'not said yet')),
        el('form', { className: 'add-address', autocomplete: 'off', onsubmit: (event) => addAddress(event, peer) },
          el('input', { type: 'text', name: 'address', className: 'address-input', placeholder: 'HOST[:PORT]',
            'aria-label': 'Address for ' + peer.name, spellcheck: 'false', required: true, maxlength: 512 }),
          el('button', { type: 'submit', className: 'add-address-button' }, 'Add address')));
    })));
}

async function addAddress(event, peer) {
  event.preventDefault();
  const field = event.target.querySelector('input[name=address]');
  const address = field.value.trim();
  if (!address) return;
  try {
    const answer = await api('POST', `/api/peers/${encodeURIComponent(peer.device_id)}/addresses`, { address });
    await loadPeers();
    render();
    say(`Added ${address} to ${answer.name}.`);
  } catch (error) { fail(error); }
}

async function removeAddress(peer, address) {
  try {
    const answer = await api('POST', `/api/peers/${encodeURIComponent(peer.device_id)}/addresses/remove`, { address });
    await loadPeers();
    render();
    say(`Removed ${address} from ${answer.name}.`);
  } catch (error) { fail(error); }
}

// ---- Network: consent ---------------------------------------------------------------------

async function loadConsent() { state.consent = await api('GET', '/api/consent'); }

const scopeNames = {
  'local-network': 'Find and connect to your devices on the local network',
  'background-sync': 'Sync on a schedule while memo-peer serve runs',
  'all-service-types': 'List every kind of service on the network (browse --all-types)',
};

/// A network's state (`network list`'s words) as the page says it.
const networkStates = {
  allowed: 'allowed',
  undetermined: 'not allowed yet',
  denied: 'denied',
  revoked: 'no longer allowed',
};

/// The network this device is on, and whether memo-peer may use it: where it is not allowed,
/// memo-peer waits (nothing is advertised, browsed or dialled there) until a person allows
/// it, which the page asks with the question `network allow` records.
function networkSection(consent) {
  const network = consent.network;
  if (!network) {
    return [el('p', { id: 'network-line', 'data-state': 'none' },
      'This device is on no network: no interface but loopback has an address.')];
  }
  const allowed = network.state === 'allowed';
  const parts = [el('p', { id: 'network-line', 'data-state': network.state },
    'This network: ', iso(network.name), ' — ', el('strong', {}, networkStates[network.state] || network.state))];
  if (!allowed) {
    parts.push(el('p', { className: 'note', id: 'network-waits' },
      'memo-peer waits on this network: nothing is advertised, browsed or dialled here until you allow it.'));
  }
  if (!network.identified) {
    parts.push(el('p', { className: 'hint' }, 'This network cannot be told apart yet (its gateway has not ' +
      'answered): use it a moment, then allow it.'));
  } else {
    parts.push(el('div', { className: 'buttons' }, allowed
      ? el('button', { type: 'button', id: 'deny-network', onclick: () => askNetwork(network) }, 'Stop using this network…')
      : el('button', { type: 'button', id: 'allow-network', className: 'primary', onclick: () => askNetwork(network) },
        'Allow this network…')));
  }
  return parts;
}

/// What the background service (memo-peer serve, or serve --web) is doing, from the status:
/// when it waits, why, in its own words (escaped, as on the terminal).
function serviceLine() {
  const serve = state.status?.serve;
  if (!serve) {
    return el('p', { className: 'hint', id: 'service-state', 'data-state': 'stopped' },
      'The background service (memo-peer serve) is not running here.');
  }
  if (serve.state === 'waiting') {
    return el('p', { className: 'note', id: 'service-state', 'data-state': 'waiting' },
      'The background service waits for ', iso(visible(serve.waiting_for || 'something')), '.');
  }
  return el('p', { className: 'hint', id: 'service-state', 'data-state': serve.state },
    serve.state === 'advertising' ? 'The background service is on the network: your devices can find this one.' :
      'The background service is stopping.');
}

function renderNetwork() {
  const consent = state.consent;
  if (!consent) return [el('p', { className: 'empty' }, 'Loading…')];
  return [
    el('section', { id: 'this-network' }, networkSection(consent), serviceLine()),
    el('p', {}, 'memo-peer uses the local network only after you allow it. What it asks:'),
    el('p', { className: 'usage', id: 'usage-text' }, consent.usage_text),
    el('ul', { className: 'list', id: 'consent-list' }, Object.keys(scopeNames).map((scope) => {
      const entry = consent.scopes[scope] || { state: 'undetermined' };
      const last = entry.last;
      return el('li', { className: 'row', 'data-scope': scope },
        el('span', { className: 'title' }, scopeNames[scope]),
        el('span', { className: 'meta' }, entry.state, last ? [` (${localTime(new Date(last.time).toISOString())}, by `,
          iso(last.user), `, via ${last.method})`] : null),
        el('span', { className: 'spacer' }),
        entry.state === 'granted'
          ? el('button', { type: 'button', onclick: () => decide(scope, 'revoked') }, 'Revoke')
          : el('button', { type: 'button', onclick: () => askConsent(scope, consent.usage_text) }, 'Allow…'));
    })),
    el('p', { className: 'hint' }, 'Nothing is sent until a scope is granted; Sync asks for local-network access the first time.'),
  ];
}

/// The consent prompt: the terminal's usage text, and nothing recorded until a click.
function askConsent(scope, usageText, then) {
  openDialog({
    title: 'Allow memo-peer to use the local network?',
    lines: [el('p', { className: 'usage', id: 'consent-text' }, usageText),
      el('p', { className: 'hint' }, `Scope: ${scope}. Your answer is recorded in the consent log, with this text; you can change it later under Network.`)],
    buttons: [
      { label: "Don't Allow", action: 'deny', run: () => decide(scope, 'denied', then) },
      { label: 'Allow', action: 'allow', className: 'primary', run: () => decide(scope, 'granted', then) },
    ],
  });
}

async function decide(scope, decision, then) {
  try {
    await api('POST', '/api/consent', { scope, decision });
    await loadConsent();
    if (state.view === 'network') render();
    say(`${scope}: ${decision}.`);
    if (then && decision === 'granted') await then();
  } catch (error) { fail(error); }
}

/// The question about this network, as `network allow` records it: nothing is recorded
/// until a click, and the answer is recorded with method `web`.
function askNetwork(network) {
  openDialog({
    title: network.state === 'allowed' ? 'Stop using this network?' : 'Allow memo-peer on this network?',
    lines: [el('p', { className: 'usage', id: 'network-question' }, network.question),
      el('p', { className: 'hint' }, 'Your answer is recorded in the consent log, with this text; you can change ' +
        'it later under Network.')],
    buttons: [
      { label: "Don't Allow", action: 'deny', run: () => decideNetwork('denied') },
      { label: 'Allow', action: 'allow', className: 'primary', run: () => decideNetwork('granted') },
    ],
  });
}

async function decideNetwork(decision) {
  try {
    await api('POST', '/api/consent', { scope: 'network', decision });
    await loadConsent();
    await refreshStatus();
    if (state.view === 'network') render();
    say(decision === 'granted' ? 'This network is allowed: memo-peer may use it now.'
      : 'This network is denied: memo-peer waits here.');
  } catch (error) { fail(error); }
}

// ---- Sync ---------------------------------------------------------------------------------

async function syncClicked() {
  say('');
  if (locked() || state.sessionLocked) {
    say('Unlock the node first: a sync reads and writes memos.', true);
    return;
  }
  try {
    await loadConsent();
    const local = state.consent.scopes['local-network'];
    if (local.state === 'undetermined') {
      askConsent('local-network', state.consent.usage_text, startSync);
      return;
    }
    if (local.state !== 'granted') {
      say(`Local-network access is ${local.state}: allow it under Network to sync.`, true);
      return;
    }
    await startSync();
  } catch (error) { fail(error); }
}

let syncTimer = null;
async function startSync() {
  try {
    state.sync = await api('POST', '/api/sync', {});
    renderSync();
    pollSync();
  } catch (error) { fail(error); }
}

function pollSync() {
  clearTimeout(syncTimer);
  syncTimer = setTimeout(async () => {
    try {
      state.sync = await api('GET', '/api/sync');
      renderSync();
      if (state.sync.state === 'running') {
        pollSync();
      } else {
        await refreshData();
        render();
      }
    } catch (error) { fail(error); }
  }, 400);
}

function renderSync() {
  const sync = state.sync;
  const panel = $('sync-panel');
  $('sync-button').disabled = sync?.state === 'running';
  if (!sync || sync.state === 'idle') {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  const lines = [];
  if (sync.state === 'running') {
    lines.push(el('strong', {}, 'Syncing…'));
    for (const step of sync.progress || []) lines.push(el('li', {}, iso(visible(step))));
  } else {
    lines.push(el('strong', {}, 'Sync finished ' + localTime(sync.finished)));
    for (const peer of sync.result?.peers || []) {
      lines.push(el('li', {}, iso(peer.name), peer.error
        ? [': not synced: ', iso(visible(peer.error.message))]
        : `: received ${peer.received?.applied ?? 0}, sent ${peer.sent_revisions ?? 0}, conflicts ${peer.received?.conflicts ?? 0}`,
      peer.status === 'held' ? [` — ${peer.received.held_deletes} deletes held back; decide with memo-peer sync --peer `,
        iso(peer.name), ' --allow-deletes or --keep-deleted'] : null));
    }
    if (sync.error) lines.push(el('li', { className: 'error' }, iso(visible(sync.error.message + (sync.error.hint ? ` (${sync.error.hint})` : '')))));
  }
  panel.replaceChildren(el('div', { id: 'sync-state', 'data-state': sync.state }, lines[0], el('ul', {}, lines.slice(1))));
}

// ---- Lock and unlock ----------------------------------------------------------------------

async function unlock(event) {
  event.preventDefault();
  const field = $('passphrase');
  const passphrase = field.value;
  field.value = '';
  try {
    await api('POST', '/api/unlock', passphrase, 'application/octet-stream');
    // The answer may carry this page's new session cookie (when the lock had suspended the
    // session): answers to requests sent before it no longer count, and everything is loaded
    // afresh.
    sessionEpoch += 1;
    state.sessionLocked = false;
    state.view = 'memos';
    state.status = await api('GET', '/api/status');
    await refreshData();
    state.sync = await api('GET', '/api/sync');
    renderSync();
    render();
    say('Unlocked.');
  } catch (error) {
    if (state.sessionLocked && error instanceof APIError && error.status !== 401) {
      say(error.message + (error.hint ? ` (${error.hint})` : ''), true);
    } else {
      fail(error);
    }
  }
}

async function lockNow() {
  try {
    await api('POST', '/api/lock');
    await refreshStatus();
    say('Locked.');
  } catch (error) { fail(error); }
}

async function signOut() {
  try { await api('DELETE', '/api/session'); } catch (_) { /* signed out either way */ }
  signedOut();
}

function signedOut() {
  if (state.signedOut) return;
  forgetContent();
  state.signedOut = true;
  state.list = null;
  document.body.replaceChildren(el('main', {},
    el('h1', {}, 'Signed out'),
    el('p', {}, 'Run memo-peer web --open on this computer to sign in again.')));
  document.body.className = 'notice';
}

// ---- Dialogs ------------------------------------------------------------------------------

function openDialog(description) {
  state.dialog = description;
  renderDialog();
}

function renderDialog() {
  const description = state.dialog;
  const backdrop = $('dialog-backdrop');
  if (!description || state.hidden || state.sessionLocked || state.signedOut) {
    $('dialog').replaceChildren();
    backdrop.hidden = true;
    return;
  }
  const buttons = description.buttons.map((button) => el('button', {
    type: 'button', className: button.className || '', 'data-action': button.action,
    onclick: () => {
      state.dialog = null;
      renderDialog();
      if (button.run) button.run();
    },
  }, button.label));
  $('dialog').replaceChildren(
    el('h2', { id: 'dialog-title' }, description.title),
    ...description.lines.map((line) => line instanceof Node ? line : el('p', {}, line)),
    el('div', { className: 'buttons' }, buttons));
  backdrop.hidden = false;
  buttons[0].focus();
}

document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && state.dialog) {
    state.dialog = null;
    renderDialog();
  }
});

// ---- The privacy screen -------------------------------------------------------------------

/// Takes every memo text out of the page before the browser can snapshot it: the view
/// and the dialog are emptied (the editor's fields kept in memory), a placeholder shows.
function hide() {
  if (state.hidden || state.signedOut) return;
  captureDraft();
  state.hidden = true;
  $('content').replaceChildren();
  $('dialog').replaceChildren();
  $('dialog-backdrop').hidden = true;
  $('privacy-screen').hidden = false;
}

/// Brings the page back when the window is visible and in front again.
function show() {
  if (!state.hidden || state.signedOut || document.visibilityState !== 'visible') return;
  state.hidden = false;
  $('privacy-screen').hidden = true;
  render();
  renderDialog();
}

window.addEventListener('blur', hide);
window.addEventListener('pagehide', hide);
window.addEventListener('focus', show);
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') show(); else hide();
});

// ---- Start --------------------------------------------------------------------------------

async function start() {
  for (const button of document.querySelectorAll('.tab')) {
    button.addEventListener('click', () => {
      const view = button.dataset.view;
      const loads = { memos: refreshData, trash: loadTrash, inbox: loadInbox, conflicts: loadConflicts,
        devices: loadPeers, network: loadConsent };
      go(view, loads[view]);
    });
  }
  $('sync-button').addEventListener('click', syncClicked);
  $('lock-button').addEventListener('click', lockNow);
  $('sign-out-button').addEventListener('click', signOut);
  try {
    state.status = await api('GET', '/api/status');
    await refreshData();
    state.sync = await api('GET', '/api/sync');
    renderSync();
    if (state.sync.state === 'running') pollSync();
  } catch (error) { fail(error); }
  if (document.visibilityState !== 'visible') hide();
  render();
  document.body.dataset.ready = 'true';
  watchChanges();
}

/// The lock state can change behind the page's back (memo-peer lock, the idle timeout), and
/// so can the memos (live sync, a peer's delivery): `changes` in the status says so. One
/// status call at a time waits on the server for the mark to move (long polling); the
/// server lets it go within a second of a lock, so the page empties well within two. With
/// no mark to wait on (the node locked under a session that stays), after a failed call,
/// or when the server answered at once with nothing changed (it could not wait), the next
/// call is a second later: never a busy loop.
async function watchChanges() {
  for (;;) {
    if (state.signedOut) return;
    const mark = state.status?.changes;
    let pause = 1000;
    if (!state.sessionLocked) {
      const asked = Date.now();
      try {
        await refreshStatus(typeof mark === 'string' ? mark : undefined);
        const waited = Date.now() - asked >= 1000;
        if (typeof mark === 'string' && (waited || state.status?.changes !== mark)) pause = 0;
      } catch (error) { pause = 1000; }
    }
    if (pause) await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

start();
