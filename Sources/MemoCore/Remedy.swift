/// What a person can do next about an error, as a fact rather than as words.
///
/// Errors are made below the application layer, where nobody knows who will read them: the
/// command line words a remedy as the command to type, the web page as the thing to do on the
/// page (or not at all, when only a shell can do it). So an error names no command; it carries
/// one of these, with the facts the wording needs (a memo, a device, a scope), and each reader
/// words it (MemoCLI's `CLIRemedyText`, MemoWeb's `PageRemedyText`).
public enum Remedy: Equatable, Sendable {
  // Looking things up.
  /// The memo list shows the ids (and the trash the deleted ones, if `includingTrash`).
  case listMemos(includingTrash: Bool)
  /// An id prefix was too short: type more of it.
  case typeMoreOfID
  /// The trash shows the memos deleted in the last `days` days.
  case listTrash(days: Int)
  /// A memo's history lists the revisions kept here.
  case showHistory(memo: String)
  /// The sync status says how to settle deletes held back.
  case settleHeldDeletes
  /// The outbox lists its entries.
  case listOutbox
  /// The inbox lists its entries.
  case listInbox
  /// Drop this inbox entry.
  case dropInboxEntry(String)
  /// The conflicts list shows the memos with conflict copies and the copies' ids.
  case listConflicts
  /// Resolve this memo's conflict by keeping A, B or both.
  case resolveConflict(memo: String)
  /// The notebook list shows the notebooks.
  case listNotebooks
  /// One notebook's page shows whom it is shared with (`nil`: a notebook to name).
  case showNotebook(String?)
  /// The pending notebook invitations.
  case listInvitations
  /// Name a notebook like this example.
  case newNotebook(example: String)
  /// Rename the notebook instead of recreating it.
  case renameNotebook
  /// Move a notebook's memos to another notebook before deleting it.
  case moveNotebookMemos(from: String)
  /// Make a new notebook and move this one's memos into it.
  case replaceNotebook(String)
  /// Copy the memo's text into a new memo and delete this one.
  case copyToNewMemo
  /// Delete this memo.
  case deleteMemo(String)
  /// The trusted devices are listed.
  case listTrusted

  // The node's key and protection.
  /// Unlock the node's key (on the device named, when not this one).
  case unlock(device: String?)
  /// Lock, then unlock again: the kernel keyring holds a bad key.
  case relock
  /// Protect the key with a passphrase first.
  case protectKey
  /// Try the passphrase again: the one given when the key was protected.
  case retryPassphrase
  /// The failing system call is in the debug log.
  case debugLog

  // Consent.
  /// Grant local-network consent (for this scope, or the default one).
  case grantConsent(ConsentScope?)
  /// Grant it where one can be asked (a terminal), or grant it outright.
  case askOrGrantConsent(ConsentScope)
  /// The consent log was unreadable: record the decision again.
  case recordConsentAgain

  // Devices and sync.
  /// Sync with the trusted devices (then try again).
  case sync
  /// Sync again: it resumes after the last batch stored.
  case syncAgain
  /// Sync with a member of the notebook first.
  case syncWithMember
  /// Keep (and send back) what is held from a device.
  case keepDeleted(device: String?)
  /// Pair again (or add this device to the other's trust list).
  case pairAgain(device: String?)
  /// Trust the device again (add it, or pair), then sync.
  case trustAgain
  /// Choose another name on the other device when pairing.
  case pairWithName
  /// Run pairing on the other device while this one waits.
  case pairOnOtherDevice
  /// Check that the other device serves and is visible.
  case checkPeerVisible(device: String)

  // Checks and repairs.
  /// The doctor checks this node (or tells what is wrong on the device named).
  case runDoctor(device: String?)
  /// The doctor checks the store (restore it from a backup if it is damaged).
  case checkStore
  /// Move the memos to a new node through an export and import.
  case moveMemosToNewNode
  /// Move the damaged file aside and restore the memos from an export.
  case restoreFromExport
  /// Make an archive with export.
  case exportArchive

  /// A stable, documented name per case (docs/CLI.md, `remedy` in `--json` errors): scripts
  /// may match on it; the wording may change.
  public enum Code: String, Sendable, CaseIterable {
    case listMemos = "list-memos"
    case typeMoreOfID = "type-more-of-id"
    case listTrash = "list-trash"
    case showHistory = "show-history"
    case settleHeldDeletes = "settle-held-deletes"
    case listOutbox = "list-outbox"
    case listInbox = "list-inbox"
    case dropInboxEntry = "drop-inbox-entry"
    case listConflicts = "list-conflicts"
    case resolveConflict = "resolve-conflict"
    case listNotebooks = "list-notebooks"
    case showNotebook = "show-notebook"
    case listInvitations = "list-invitations"
    case newNotebook = "new-notebook"
    case renameNotebook = "rename-notebook"
    case moveNotebookMemos = "move-notebook-memos"
    case replaceNotebook = "replace-notebook"
    case copyToNewMemo = "copy-to-new-memo"
    case deleteMemo = "delete-memo"
    case listTrusted = "list-trusted"
    case unlock
    case relock
    case protectKey = "protect-key"
    case retryPassphrase = "retry-passphrase"
    case debugLog = "debug-log"
    case grantConsent = "grant-consent"
    case askOrGrantConsent = "ask-or-grant-consent"
    case recordConsentAgain = "record-consent-again"
    case sync
    case syncAgain = "sync-again"
    case syncWithMember = "sync-with-member"
    case keepDeleted = "keep-deleted"
    case pairAgain = "pair-again"
    case trustAgain = "trust-again"
    case pairWithName = "pair-with-name"
    case pairOnOtherDevice = "pair-on-other-device"
    case checkPeerVisible = "check-peer-visible"
    case runDoctor = "run-doctor"
    case checkStore = "check-store"
    case moveMemosToNewNode = "move-memos-to-new-node"
    case restoreFromExport = "restore-from-export"
    case exportArchive = "export-archive"
  }

  public var code: Code {
    switch self {
    case .listMemos: .listMemos
    case .typeMoreOfID: .typeMoreOfID
    case .listTrash: .listTrash
    case .showHistory: .showHistory
    case .settleHeldDeletes: .settleHeldDeletes
    case .listOutbox: .listOutbox
    case .listInbox: .listInbox
    case .dropInboxEntry: .dropInboxEntry
    case .listConflicts: .listConflicts
    case .resolveConflict: .resolveConflict
    case .listNotebooks: .listNotebooks
    case .showNotebook: .showNotebook
    case .listInvitations: .listInvitations
    case .newNotebook: .newNotebook
    case .renameNotebook: .renameNotebook
    case .moveNotebookMemos: .moveNotebookMemos
    case .replaceNotebook: .replaceNotebook
    case .copyToNewMemo: .copyToNewMemo
    case .deleteMemo: .deleteMemo
    case .listTrusted: .listTrusted
    case .unlock: .unlock
    case .relock: .relock
    case .protectKey: .protectKey
    case .retryPassphrase: .retryPassphrase
    case .debugLog: .debugLog
    case .grantConsent: .grantConsent
    case .askOrGrantConsent: .askOrGrantConsent
    case .recordConsentAgain: .recordConsentAgain
    case .sync: .sync
    case .syncAgain: .syncAgain
    case .syncWithMember: .syncWithMember
    case .keepDeleted: .keepDeleted
    case .pairAgain: .pairAgain
    case .trustAgain: .trustAgain
    case .pairWithName: .pairWithName
    case .pairOnOtherDevice: .pairOnOtherDevice
    case .checkPeerVisible: .checkPeerVisible
    case .runDoctor: .runDoctor
    case .checkStore: .checkStore
    case .moveMemosToNewNode: .moveMemosToNewNode
    case .restoreFromExport: .restoreFromExport
    case .exportArchive: .exportArchive
    }
  }
}

extension MemoPeerError {
  /// The hint for a reader: the free-text hint and the remedy as `word` words it, joined by
  /// "; " (either may be absent). The command line and the page each pass their wording.
  public func hint(wording word: (Remedy) -> String?) -> String? {
    let parts = [hint, remedy.flatMap(word)].compactMap { $0 }
    return parts.isEmpty ? nil : parts.joined(separator: "; ")
  }
}
