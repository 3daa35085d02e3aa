/// The one driver loop of every machine that runs over a channel (`SyncMachine`,
/// `SessionMachine`, `DeliverySender`): do the actions in order, feed the machine each
/// answer, and when every action is done read the peer's next frame for it. What an action
/// means (a frame to send, store work) is the caller's `perform`; how a frame is read (the
/// deadline, the trust check before it is acted on) is its `receive`. Pure: no I/O of its
/// own, so the loop the daemon runs is the loop the tests run.
public enum MachineDriver<Machine: DrivenMachine> {
  /// What the caller made of one action.
  public enum Step<Outcome> {
    /// Done; the machine is told nothing.
    case done
    /// Done, with this answer for the machine (the result of store work it asked for).
    case answer(Machine.Event)
    /// The machine ended: the driver returns this.
    case finish(Outcome)
  }

  /// Runs `machine` from its `first` actions until `perform` finishes it. `receive` reads
  /// the next frame, seeing the machine as it is then (what the frame will be for). An error
  /// of `perform` or `receive` ends the run with that error.
  @inlinable
  public static func run<Outcome, Failure: Error>(
    _ machine: inout Machine, from first: [Machine.Action],
    perform: (Machine.Action) throws(Failure) -> Step<Outcome>,
    receive: (Machine) throws(Failure) -> Frame?
  ) throws(Failure) -> Outcome {
    var pending = first
    while true {
      var next = 0
      while next < pending.count {
        let action = pending[next]
        next += 1
        switch try perform(action) {
        case .done: continue
        case .answer(let event): pending += machine.handle(event)
        case .finish(let outcome): return outcome
        }
      }
      // Every action so far is done: let them go. Kept, they held every batch of a sync
      // (decoded and encoded) until its end, 16 MiB more at the peak of a sync of 10,000
      // memos.
      pending.removeAll(keepingCapacity: true)
      pending += machine.handle(Machine.received(try receive(machine)))
    }
  }
}
