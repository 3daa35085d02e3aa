extension WebAssets {
  /// The page's skeleton; app.js fills `#content`. No inline script or style anywhere (the
  /// Content-Security-Policy would refuse them).
  static let indexPage = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="referrer" content="no-referrer">
    <title>memo-peer</title>
    <link rel="icon" href="/icon.svg">
    <link rel="stylesheet" href="/app.css">
    <script type="module" src="/app.js"></script>
    </head>
    <body>
    <header class="bar">
      <h1><img src="/icon.svg" alt="" width="24" height="24"> memo-peer</h1>
      <nav aria-label="Views">
        <button type="button" class="tab" data-view="memos">Memos</button>
        <button type="button" class="tab" data-view="inbox">Inbox <span class="count" id="inbox-count"></span></button>
        <button type="button" class="tab" data-view="conflicts">Conflicts <span class="count" id="conflict-count"></span></button>
        <button type="button" class="tab" data-view="devices">Devices</button>
        <button type="button" class="tab" data-view="network">Network</button>
      </nav>
      <div class="actions">
        <span id="lock-state" class="badge"></span>
        <button type="button" id="sync-button">Sync</button>
        <button type="button" id="lock-button" hidden>Lock</button>
        <button type="button" id="sign-out-button" class="quiet">Sign out</button>
      </div>
    </header>
    <section id="sync-panel" class="panel" hidden aria-live="polite"></section>
    <p id="message" class="message" role="status" hidden></p>
    <main id="content"></main>
    <div id="privacy-screen" class="privacy-screen" hidden>
      <p>memo-peer: memos are hidden while this window is in the background.</p>
    </div>
    <div id="dialog-backdrop" class="backdrop" hidden>
      <div id="dialog" class="dialog" role="dialog" aria-modal="true" aria-labelledby="dialog-title"></div>
    </div>
    <noscript><p class="message">The memo-peer page needs JavaScript (its own, served by memo-peer).</p></noscript>
    </body>
    </html>

    """
}
