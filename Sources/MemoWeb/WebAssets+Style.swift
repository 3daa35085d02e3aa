extension WebAssets {
  /// The page's style: the system's own fonts, no images but the icon.
  static let style = """
    :root {
      --ink: #1f2a26; --muted: #5d6b66; --paper: #fbfaf6; --card: #ffffff; --line: #dcd8cc;
      --accent: #2f5d50; --accent-ink: #ffffff; --warn: #8a3b12; --warn-paper: #fbeee4; --focus: #c58b1b;
      color-scheme: light;
    }
    * { box-sizing: border-box; }
    html { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; font-size: 16px; }
    body { margin: 0; background: var(--paper); color: var(--ink); line-height: 1.45; }
    button, input, select, textarea { font: inherit; color: inherit; }
    button {
      border: 1px solid var(--line); background: var(--card); border-radius: 6px; padding: 0.35rem 0.8rem;
      cursor: pointer;
    }
    button:hover:not(:disabled) { border-color: var(--accent); }
    button:disabled { opacity: 0.5; cursor: default; }
    button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-ink); }
    button.danger { border-color: var(--warn); color: var(--warn); }
    button.quiet { border-color: transparent; background: transparent; color: var(--muted); }
    :focus-visible { outline: 3px solid var(--focus); outline-offset: 1px; }
    input[type=text], input[type=search], input[type=password], select, textarea {
      border: 1px solid var(--line); border-radius: 6px; padding: 0.4rem 0.55rem; background: var(--card);
    }
    textarea { width: 100%; min-height: 16rem; resize: vertical; font-family: inherit; }

    .bar {
      display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.25rem; padding: 0.6rem 1.25rem;
      background: var(--card); border-bottom: 1px solid var(--line);
    }
    .bar h1 { font-size: 1.15rem; margin: 0; display: flex; align-items: center; gap: 0.4rem; }
    .bar nav { display: flex; flex-wrap: wrap; gap: 0.25rem; }
    .tab { border-color: transparent; background: transparent; }
    .tab[aria-current=page] { border-color: var(--accent); color: var(--accent); font-weight: 600; }
    .count:not(:empty) {
      display: inline-block; min-width: 1.3rem; padding: 0 0.3rem; border-radius: 999px; background: var(--accent);
      color: var(--accent-ink); font-size: 0.8rem; text-align: center;
    }
    .actions { margin-left: auto; display: flex; align-items: center; gap: 0.5rem; }
    .badge { font-size: 0.85rem; color: var(--muted); }
    .badge.locked { color: var(--warn); font-weight: 600; }

    main, .panel, .message { max-width: 60rem; margin: 1rem auto; padding: 0 1.25rem; }
    .panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem 1.25rem; }
    .panel ul { margin: 0.3rem 0 0; padding-left: 1.1rem; }
    .message { color: var(--accent); font-weight: 600; }
    .message.error { color: var(--warn); }
    .hint { color: var(--muted); font-size: 0.9rem; }

    .toolbar { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin-bottom: 1rem; }
    .toolbar input[type=search] { flex: 1 1 16rem; }
    .list { list-style: none; margin: 0; padding: 0; border: 1px solid var(--line); border-radius: 8px;
      background: var(--card); }
    .list > li + li { border-top: 1px solid var(--line); }
    .list .item { display: flex; flex-wrap: wrap; gap: 0.25rem 0.8rem; align-items: baseline; width: 100%;
      border: 0; border-radius: 0; text-align: left; padding: 0.6rem 0.9rem; background: transparent; }
    .list .item:hover:not(:disabled) { background: var(--paper); }
    .list .item:disabled { opacity: 1; color: var(--muted); }
    .list .row { display: flex; flex-wrap: wrap; gap: 0.5rem 0.8rem; align-items: center; padding: 0.6rem 0.9rem; }
    .title { font-weight: 600; }
    .title.withheld { font-weight: 400; font-style: italic; color: var(--muted); }
    .time, .meta { color: var(--muted); font-size: 0.85rem; }
    .tags { display: inline-flex; flex-wrap: wrap; gap: 0.25rem; }
    .tags:empty { display: none; }
    .tag { font-size: 0.8rem; padding: 0 0.45rem; border-radius: 999px; background: #e7efe9; color: var(--accent); }
    .private-mark { color: var(--accent); }
    .flag { font-size: 0.8rem; color: var(--warn); background: var(--warn-paper); border-radius: 4px; padding: 0 0.35rem; }
    .spacer { flex: 1; }
    .empty { color: var(--muted); padding: 1rem 0.9rem; margin: 0; }

    article.memo { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem 1.25rem; }
    article.memo h2 { margin: 0 0 0.25rem; font-size: 1.35rem; overflow-wrap: anywhere; }
    article.memo .meta { margin: 0 0 0.5rem; }
    .body { white-space: pre-wrap; overflow-wrap: anywhere; font-family: inherit; margin: 1rem 0 0; }
    .buttons { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 1rem; }
    .note { background: var(--warn-paper); color: var(--warn); border-radius: 6px; padding: 0.5rem 0.75rem; }

    form.editor { display: grid; gap: 0.75rem; }
    form.editor label { display: grid; gap: 0.25rem; font-weight: 600; }
    form.editor label.inline { display: flex; align-items: center; gap: 0.5rem; font-weight: 400; }

    .side-by-side { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
    .side-by-side article.memo { min-width: 0; }
    .side-by-side h3 { margin: 0 0 0.5rem; font-size: 0.9rem; text-transform: uppercase; letter-spacing: 0.04em;
      color: var(--muted); }
    @media (max-width: 40rem) { .side-by-side { grid-template-columns: 1fr; } }

    table.devices { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); }
    table.devices th, table.devices td { text-align: left; padding: 0.45rem 0.7rem; border-bottom: 1px solid var(--line); }
    table.devices td.id { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85rem; }

    form.unlock { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 0 0 1rem;
      background: var(--warn-paper); border-radius: 8px; padding: 0.75rem 1rem; }
    form.unlock p { flex-basis: 100%; margin: 0; color: var(--warn); }

    .backdrop { position: fixed; inset: 0; background: rgba(20, 30, 26, 0.45); display: flex; align-items: center;
      justify-content: center; padding: 1rem; }
    .backdrop[hidden], .privacy-screen[hidden] { display: none; }
    .dialog { background: var(--card); border-radius: 10px; max-width: 32rem; padding: 1.25rem 1.5rem;
      box-shadow: 0 10px 40px rgba(0, 0, 0, 0.25); }
    .dialog h2 { margin-top: 0; font-size: 1.2rem; }
    .dialog .buttons { justify-content: flex-end; }
    .usage { background: var(--paper); border-left: 4px solid var(--accent); padding: 0.5rem 0.75rem; }

    .privacy-screen { position: fixed; inset: 0; background: var(--paper); display: flex; align-items: center;
      justify-content: center; color: var(--muted); z-index: 10; text-align: center; padding: 2rem; }

    body.notice main { max-width: 34rem; margin: 4rem auto; background: var(--card); border: 1px solid var(--line);
      border-radius: 10px; padding: 1rem 1.5rem; }

    """
}
