import MemoCore
import MemoStore

/// `list`: the memos as the lock state lets them be read, and the notebooks this device
/// only relays (counts, never content).
public struct MemoList: Sendable {
  public var memos: [MemoListing]
  public var relayed: [NotebookSummary]
  /// Memo content was locked: private memos' titles and all tags are withheld.
  public var locked: Bool
}

/// `list` read as it goes: what is known before the first memo (the lock state, the
/// relayed notebooks), then the memos one at a time (`forEachMemo`), newest first, so that
/// nothing holds every row.
public struct MemoListStream {
  public var relayed: [NotebookSummary]
  /// Memo content was locked: private memos' titles and all tags are withheld.
  public var locked: Bool
  let store: MemoStore
  let tag: String?
  let notebook: NotebookID?

  /// Calls `body` with each memo as it is read; the checks (a tag needs the node unlocked)
  /// are made before the first call. `body` may throw to stop.
  public func forEachMemo(_ body: (MemoListing) throws -> Void) throws {
    try store.forEachListing(tag: tag, notebook: notebook, body)
  }
}

/// `search`: the memos found, and the relayed notebooks it could not search.
public struct MemoSearch: Sendable {
  public var memos: [MemoSummary]
  public var relayed: [NotebookSummary]
}

/// What the page's search found: with text, the memos that contain it (and have the tag);
/// with a tag alone, the listing of that tag.
public enum MemoFound: Sendable {
  case listed(MemoList)
  case found(MemoSearch)
}

/// A memo moved to another notebook.
public struct MovedMemo: Sendable {
  public var memo: Memo
  public var notebook: Notebook
}

/// How `edit` ended.
public enum MemoEditOutcome: Sendable {
  /// Only the pin changed (it may, while locked); `memo` when the node could read it.
  case pinned(MemoID, Bool, memo: Memo?)
  case saved(Memo)
}

/// Where an edit's new body comes from, asked only after the memo is known to be changeable.
public enum NewBody {
  /// Text read without the old body (stdin).
  case read(() throws -> String)
  /// The old body edited (an editor).
  case edit((String) throws -> String)
}

/// Memos of this node: new, list, show, edit (with the expected-revision check), delete,
/// search, move.
public struct MemoUseCases {
  let app: App

  /// A new memo in `notebook` (a name; nil: the default one). Refused while locked before
  /// `draft` is asked for, so no text is typed into a node that could not save it.
  public func create(in notebook: String? = nil, draft: () throws -> MemoDraft) throws -> Memo {
    try app.requireUnlocked()
    let notebook = try app.notebook(named: notebook)
    let draft = try draft()
    return try app.store().create(draft, now: app.now, in: notebook?.id)
  }

  /// The memos, newest first (with `tag`, or in `notebook`, only those), as the lock state
  /// lets them be read; `includingRelayed` adds the notebooks this device only relays.
  public func list(tag: String? = nil, notebook: String? = nil, includingRelayed: Bool = true) throws -> MemoList {
    let stream = try listStream(tag: tag, notebook: notebook, includingRelayed: includingRelayed)
    var memos: [MemoListing] = []
    try stream.forEachMemo { memos.append($0) }
    return MemoList(memos: memos, relayed: stream.relayed, locked: stream.locked)
  }

  /// `list` as a stream (the command line prints each memo as it is read).
  public func listStream(
    tag: String? = nil, notebook: String? = nil, includingRelayed: Bool = true
  ) throws -> MemoListStream {
    let store = try app.store()
    let notebook = try app.notebook(named: notebook)
    let relayed = includingRelayed ? try relayedSummaries(only: notebook) : []
    return MemoListStream(
      relayed: relayed, locked: !store.lockState.canReadContent, store: store, tag: tag, notebook: notebook?.id)
  }

  /// One memo, by id or unique prefix. `explainingSealed`: a memo of a notebook this device
  /// only relays is the `sealed` error that says who can read it, not `not-found`.
  public func show(_ reference: String, explainingSealed: Bool = true) throws -> Memo {
    let store = try app.store()
    let id = explainingSealed ? try memoIDOrSealed(reference) : try store.resolve(reference)
    return try store.memo(id)
  }

  /// Changes a memo: its pin (`pin`, which works while locked), its fields (`change`), its
  /// body (`newBody`, asked for after the checks). With `expectedRevision`, a memo that
  /// changed since the writer read it keeps the new text as a memo of its own (`save`).
  public func edit(
    _ reference: String, pin: Bool? = nil, change: MemoChange, newBody: NewBody? = nil,
    expectedRevision: Int64? = nil
  ) throws -> MemoEditOutcome {
    let store = try app.store()
    let id = try store.resolve(reference)
    if let pin {
      try store.setPinned(id, pin)
      if change.isEmpty && newBody == nil {
        return .pinned(id, pin, memo: store.lockState.canReadContent ? try store.memo(id) : nil)
      }
    }
    try app.requireUnlocked()
    try store.checkChangeable(id)
    var change = change
    switch newBody {
    case .read(let read)?: change.body = try read()
    case .edit(let edit)?: change.body = try edit(try store.memo(id).body)
    case nil: break
    }
    return .saved(try Self.save(change, to: id, in: store, now: app.now, expectedRevision: expectedRevision))
  }

  /// Deletes a memo (its text wiped, a tombstone keeping the id). `confirm` gets its id and
  /// a way to read its title (only when it asks) and says whether to go on; nil: no question
  /// (`--yes`, the page).
  @discardableResult
  public func delete(
    _ reference: String, confirm: ((MemoID, _ title: () throws -> String) throws -> Bool)? = nil
  ) throws -> MemoID {
    let store = try app.store()
    let id = try store.resolve(reference)
    try store.checkChangeable(id)
    if let confirm {
      guard try confirm(id, { try store.memo(id).title }) else {
        throw MemoPeerError(.cancelled, "nothing was deleted")
      }
    }
    try store.delete(id, now: app.now)
    return id
  }

  /// Memos whose title, tags or body contain `text` (case-insensitive), in `notebook` when
  /// given; `includingRelayed` adds the relayed notebooks it could not search.
  public func search(_ text: String, notebook: String? = nil, includingRelayed: Bool = true) throws -> MemoSearch {
    var found: [MemoSummary] = []
    let relayed = try search(text, notebook: notebook, includingRelayed: includingRelayed) { found.append($0) }
    return MemoSearch(memos: found, relayed: relayed)
  }

  /// `search` as a stream: `body` gets each memo found as it is read, newest first (and may
  /// throw to stop); the answer is the relayed notebooks it could not search.
  public func search(
    _ text: String, notebook: String? = nil, includingRelayed: Bool = true, _ body: (MemoSummary) throws -> Void
  ) throws -> [NotebookSummary] {
    let notebook = try app.notebook(named: notebook)
    let relayed = includingRelayed ? try relayedSummaries(only: notebook) : []
    try app.store().search(text, notebook: notebook?.id, body)
    return relayed
  }

  /// The page's search: `text` (trimmed; with `tag`, only memos that have it), or with a
  /// tag alone the listing of that tag. Nothing of relayed notebooks.
  public func find(text: String?, tag: String?) throws -> MemoFound {
    let tag = try tag.map { tag -> String in
      guard let normalized = try MemoRules.normalizeTags([tag]).first else {
        throw MemoPeerError(.invalidInput, "the tag is empty")
      }
      return normalized
    }
    guard let text = text?.trimmingWhitespace, !text.isEmpty else {
      return .listed(try list(tag: tag, includingRelayed: false))
    }
    var found = try search(text, includingRelayed: false)
    found.memos = found.memos.filter { memo in tag.map { memo.tags.contains($0) } ?? true }
    return .found(found)
  }

  /// Moves a memo to the notebook named `notebook`, as a new revision there.
  public func move(_ reference: String, to notebook: String) throws -> MovedMemo {
    try app.requireUnlocked()
    let store = try app.store()
    let target = try store.findNotebook(notebook)
    let memo = try store.move(try store.resolve(reference), to: target.id, now: app.now)
    return MovedMemo(memo: memo, notebook: target)
  }

  /// The notebooks this device relays (all, or `only` when it is one of them): what `list`,
  /// `search` and `export` show of them — counts, never content.
  public func relayedSummaries(only: Notebook? = nil) throws -> [NotebookSummary] {
    if let only, only.role == .member { return [] }
    return try app.store().relayedNotebookSummaries().filter { only == nil || $0.notebook.id == only?.id }
  }

  /// `reference` as a memo id; when it names a memo of a notebook this device only relays,
  /// the `sealed` error that says so (and who can read it).
  func memoIDOrSealed(_ reference: String) throws -> MemoID {
    let store = try app.store()
    do { return try store.resolve(reference) } catch let error as MemoPeerError where error.code == .notFound {
      guard let relayed = try store.relayedMemo(matching: reference) else { throw error }
      let names = try app.names()
      let members = try store.members(of: relayed.notebook).map { names.device($0.device) }
      let revisions = relayed.revisions
      throw MemoPeerError(
        .sealed,
        "memo \(relayed.memo.short) is sealed for the members of notebook \(relayed.notebook.short): this device "
          + "relays its \(revisions) sealed revision\(revisions == 1 ? "" : "s") and has no key to open \(revisions == 1 ? "it" : "them")",
        hint: members.isEmpty
          ? "read it on a device that is a member of the notebook"
          : "read it on a member of the notebook: " + members.sorted().joined(separator: ", "))
    }
  }

  /// Changes a memo (for `edit` and the web page). When a sync brought a conflict copy while
  /// the text was being written, or (with `expectedRevision`) the memo changed since the
  /// writer read it, the new text is kept as a memo of its own rather than lost or written
  /// over the other change, and the error says which.
  public static func save(
    _ change: MemoChange, to id: MemoID, in store: MemoStore, now: Timestamp, expectedRevision: Int64? = nil
  ) throws -> Memo {
    func keepAsNewMemo(_ reason: String, hint: String) throws -> Never {
      let current = try store.memo(id)
      let saved = try store.create(
        MemoDraft(
          title: change.title ?? current.title, body: change.body ?? current.body, tags: change.tags ?? current.tags,
          isPrivate: change.isPrivate ?? current.isPrivate), now: now)
      throw MemoPeerError(
        .conflict, "\(reason); your text was saved as memo \(saved.id.short)", hint: hint)
    }
    if let expectedRevision, try store.memo(id).revision != expectedRevision {
      let reason = "memo \(id.short) changed (on another device, or elsewhere) since you opened it"
      guard change.body != nil else {
        throw MemoPeerError(.conflict, reason + "; nothing was changed", hint: "open it again and repeat the change")
      }
      // No conflict copy was made: the memo simply has a newer revision, and the text is a
      // memo of its own (`memo-peer conflicts` would list nothing).
      try keepAsNewMemo(reason, hint: "both are in the list: \(id.short) with the other change, and your text")
    }
    do {
      return try store.update(id, change, now: now)
    } catch let error as MemoPeerError where error.code == .conflict && change.body != nil {
      try keepAsNewMemo(error.message, hint: "`memo-peer conflicts` shows the versions of \(id.short)")
    }
  }
}
