import MemoCore
import MemoStore

/// A notebook deleted, and how many of its memos moved first.
public struct DeletedNotebook: Sendable {
  public var notebook: Notebook
  public var moved: Int
}

/// A notebook shared with a trusted device.
public struct SharedNotebook: Sendable {
  public var notebook: Notebook
  public var peer: TrustedPeer
  public var role: NotebookRole
}

/// A notebook no longer shared with a device (whether its key was rotated, as what it was
/// shared).
public struct UnsharedNotebook: Sendable {
  public var notebook: Notebook
  public var device: DeviceID
  public var result: UnshareResult
}

/// Notebooks: which memos go to which devices (docs/CLI.md, "Notebooks"). A notebook is
/// named by its name here, or (a relayed one) by a prefix of its id.
public struct NotebookUseCases {
  let app: App

  /// Every notebook with its counts and whom it is shared with.
  public func list() throws -> [NotebookSummary] { try app.store().notebookSummaries() }

  public func find(_ name: String) throws -> Notebook { try app.store().findNotebook(name) }

  /// A notebook's counts and members now.
  public func summary(of notebook: Notebook) throws -> NotebookSummary {
    guard let summary = try app.store().notebookSummaries().first(where: { $0.notebook.id == notebook.id }) else {
      throw MemoPeerError(.notFound, "that notebook is not on this device")
    }
    return summary
  }

  /// A new notebook, with a new key.
  public func create(_ name: String) throws -> Notebook {
    try app.store().createNotebook(named: name, now: app.now)
  }

  /// A member's rename is signed into the notebook's log: every member takes the new name
  /// (made unique on each device); a relay never learns it.
  public func rename(_ name: String, to newName: String) throws -> Notebook {
    try app.store().renameNotebook(name, to: newName, now: app.now)
  }

  /// The notebooks shared with this device that a person has not accepted yet
  /// (`includingDeclined`: the declined ones too).
  public func invitations(includingDeclined: Bool = false) throws -> [NotebookInvitation] {
    try app.store().invitations(includingDeclined: includingDeclined)
  }

  /// A person takes an invitation: the notebook syncs from the next sync on, in the role
  /// its log gives this device (at once under live sync: `serve` sees the accept in the
  /// store's marks, `SyncMarks`, and its links ask for the notebook).
  public func accept(_ reference: String) throws -> Notebook {
    try app.requireUnlocked()
    return try app.store().acceptInvitation(reference, now: app.now)
  }

  /// A person declines an invitation: nothing of the notebook moves, and it is not offered
  /// again unless a member shares it with this device anew.
  public func decline(_ reference: String) throws -> NotebookInvitation {
    try app.store().declineInvitation(reference, now: app.now)
  }

  /// Deletes a notebook; one with memos only with `moveTo` (they move there first).
  public func delete(_ name: String, moveTo: String?) throws -> DeletedNotebook {
    try app.requireUnlocked()
    let (deleted, moved) = try app.store().deleteNotebook(name, moveTo: moveTo, now: app.now)
    return DeletedNotebook(notebook: deleted, moved: moved)
  }

  /// Makes a notebook the one `new` puts memos in without `--notebook`.
  public func makeDefault(_ name: String) throws -> Notebook {
    let store = try app.store()
    let chosen = try store.findNotebook(name)
    try store.setDefaultNotebook(chosen.id)
    return try store.findNotebook(chosen.id.rawValue)
  }

  /// Shares a notebook with the trusted device `peer` names (a name or device-ID prefix).
  public func share(_ name: String, with peer: String, as role: NotebookRole) throws -> SharedNotebook {
    let notebook = try find(name)
    let peer = try app.trustStore.load().find(peer)
    try app.store().share(notebook.id, with: peer.deviceID, as: role, now: app.now)
    return SharedNotebook(notebook: notebook, peer: peer, role: role)
  }

  /// Shares a notebook with a device just trusted (`pair`, `trust add --share`).
  public func share(_ name: String, with peer: TrustedPeer, as role: NotebookRole) throws -> SharedNotebook {
    let notebook = try find(name)
    try app.store().share(notebook.id, with: peer.deviceID, as: role, now: app.now)
    return SharedNotebook(notebook: notebook, peer: peer, role: role)
  }

  /// Stops sharing a notebook with a device: a trusted one by name or ID prefix, or any
  /// member by ID prefix. Rotates the key when a member leaves; the device keeps what it
  /// already received.
  public func unshare(_ name: String, from reference: String) throws -> UnsharedNotebook {
    let notebook = try find(name)
    let store = try app.store()
    let members = try store.members(of: notebook.id)
    let trusted = try? app.trustStore.load()
    let device =
      (try? trusted?.find(reference))?.deviceID
      ?? members.first { $0.device.hasPrefix(reference) }?.device
    guard let device else {
      throw MemoPeerError(
        .notFound,
        "\(notebook.displayName) is not shared with a device named \(TerminalText.echo(reference))",
        hint: "`memo-peer notebook show \(notebook.name ?? notebook.id.rawValue)` lists whom it is shared with")
    }
    let result = try store.unshare(notebook.id, from: device, now: app.now)
    return UnsharedNotebook(notebook: notebook, device: device, result: result)
  }
}
