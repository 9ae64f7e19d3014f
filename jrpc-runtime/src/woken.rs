//! Wraps what a loop waits on in every turn (futures, or a part's poll), polling it again only
//! once it has woken.
//!
//! A connection's loop selects over many sources, and every turn polls each one that is not
//! ready. Some are dear to poll even when nothing happened: a `Notify` or a cancellation token
//! takes a lock per poll. [`Woken`] gives the wrapped future a waker of its own and, in a turn
//! where that waker was not called, answers `Pending` at the cost of two atomic operations;
//! [`Wakes`] does the same for a part of the loop polled through a function of its own.
//!
//! A loop with several such parts that runs in every open connection (a WebSocket's pump) keeps
//! their flags in one word instead ([`WakeSet`]): a turn then reads one cache line to learn which
//! parts woke, where each [`Wakes`] is an allocation of its own, and none when the word shares a
//! line the turn reads anyway ([`HoldsFlags`]). With a thousand connections woken in turn, those
//! lines are not in the cache, and each costs a miss.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Gives one part of a task's work (a future, or a poll function) a waker of its own: the task
/// polls that part only in the turns after its waker was called, and in the first.
pub(crate) struct Wakes {
    flag: Arc<Flag>,
    waker: Waker,
    /// The outer waker last registered, while no wake has taken it since: a turn of the same
    /// task then registers nothing (a registration is two compare-and-swaps and a waker
    /// compared), as a wake would still find it.
    registered: Option<Waker>,
}

/// Holds whether the part has woken since it was last polled, and whom to wake then.
struct Flag {
    woken: AtomicBool,
    outer: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.outer.wake();
    }
}

impl Wakes {
    pub(crate) fn new() -> Self {
        let flag = Arc::new(Flag {
            woken: AtomicBool::new(true),
            outer: AtomicWaker::new(),
        });
        Self {
            waker: Waker::from(Arc::clone(&flag)),
            flag,
            registered: None,
        }
    }

    /// Runs `part` with the part's own waker when it has woken since it last ran; `Pending`
    /// otherwise, at the cost of two atomic operations.
    #[inline]
    pub(crate) fn poll<T>(
        &mut self,
        cx: &mut Context<'_>,
        part: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        // Registered before the flag is read: a wake in between is not lost.
        register_once(&mut self.registered, &self.flag.outer, cx);
        if !self.flag.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        // The wake took the registration (or one may take it while the part runs): registered
        // again first, so that a wake from here on finds it.
        self.flag.outer.register(cx.waker());
        part(&mut Context::from_waker(&self.waker))
    }

    /// Has the part run in the next turn, woken or not: the task changed what it waits on.
    #[cfg(feature = "http")]
    pub(crate) fn rearm(&self) {
        self.flag.woken.store(true, Ordering::Release);
    }
}

/// Registers `cx`'s waker in `outer` unless it is the one `registered` says is there, which no
/// wake has taken since (a registration is two compare-and-swaps and a waker compared).
#[inline]
fn register_once(registered: &mut Option<Waker>, outer: &AtomicWaker, cx: &Context<'_>) {
    if !registered
        .as_ref()
        .is_some_and(|registered| registered.will_wake(cx.waker()))
    {
        outer.register(cx.waker());
        *registered = Some(cx.waker().clone());
    }
}

/// Polls a future only in the turns after its own waker was called (and in the first).
pub(crate) struct Woken<F> {
    inner: Pin<Box<F>>,
    wakes: Wakes,
}

impl<F: Future> Woken<F> {
    pub(crate) fn new(inner: F) -> Self {
        Self {
            inner: Box::pin(inner),
            wakes: Wakes::new(),
        }
    }
}

#[cfg(feature = "http")]
impl<F> Woken<F> {
    /// Returns the inner future, to change (a sleep reset, say); it is polled again in the next
    /// turn.
    pub(crate) fn inner_mut(&mut self) -> Pin<&mut F> {
        self.wakes.rearm();
        self.inner.as_mut()
    }
}

impl<F: Future> Future for Woken<F> {
    type Output = F::Output;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let inner = &mut this.inner;
        this.wakes.poll(cx, |cx| inner.as_mut().poll(cx))
    }
}

/// Gives each of up to 31 parts of a task's work a waker of its own, their flags bits of one word:
/// the task runs a part only in the turns after its waker was called (and in the first, or after
/// [`rearm`](Self::rearm)).
///
/// Each turn begins with [`turn`](Self::turn), which takes the wakes since the last; a part's bit
/// stays set in the set itself until that part runs, so a turn that ends before reaching a part
/// (a part before it was ready) loses none of its wakes.
///
/// Keeps the flags in `H`, which may hold more: a line the task's turns read anyway (see
/// [`HoldsFlags`]) holds them at no cost of a line of their own.
#[cfg(feature = "ws")]
pub(crate) struct WakeSet<H: HoldsFlags = SetFlags> {
    holder: Arc<H>,
    /// The waker of each part, by its index.
    wakers: Box<[Waker]>,
    /// The outer waker last registered, while no wake has taken it since (see [`Wakes`]).
    registered: Option<Waker>,
    /// The parts woken (or rearmed) that have not run since.
    pending: u32,
}

/// Holds which parts of a [`WakeSet`] have woken since the task last looked, and whom to wake.
#[derive(Default)]
pub(crate) struct SetFlags {
    woken: AtomicU32,
    outer: AtomicWaker,
}

/// Marks a wake of the flags' holder, a bit no part of its set owns: the holder wakes the task
/// through the flags' waker, and the set, finding a bit set, registers the task again.
pub(crate) const HOLDER_WOKE: u32 = 1 << 31;

impl SetFlags {
    /// Sets `bits` and wakes the task.
    pub(crate) fn wake(&self, bits: u32) {
        self.woken.fetch_or(bits, Ordering::Release);
        self.outer.wake();
    }

    /// Leaves `waker` to be woken by the next wake.
    pub(crate) fn register(&self, waker: &Waker) {
        self.outer.register(waker);
    }
}

/// Holds a [`WakeSet`]'s flags, beside what else it holds.
#[cfg(feature = "ws")]
pub(crate) trait HoldsFlags: Send + Sync + 'static {
    /// Returns the flags.
    fn flags(&self) -> &SetFlags;
}

#[cfg(feature = "ws")]
impl HoldsFlags for SetFlags {
    fn flags(&self) -> &SetFlags {
        self
    }
}

/// Wakes one part of a [`WakeSet`]: sets its bit, and wakes the task.
#[cfg(feature = "ws")]
struct Part<H> {
    bit: u32,
    holder: Arc<H>,
}

#[cfg(feature = "ws")]
impl<H: HoldsFlags> Wake for Part<H> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.holder.flags().wake(self.bit);
    }
}

#[cfg(all(feature = "ws", test))]
impl WakeSet {
    /// Returns a set of `parts` parts (at most 31) with flags of their own, each to run in the
    /// first turn.
    pub(crate) fn new(parts: usize) -> Self {
        Self::within(Arc::default(), parts)
    }
}

#[cfg(feature = "ws")]
impl<H: HoldsFlags> WakeSet<H> {
    /// Returns a set of `parts` parts (at most 31) whose flags `holder` holds, each to run in the
    /// first turn.
    pub(crate) fn within(holder: Arc<H>, parts: usize) -> Self {
        assert!(parts < 32, "a wake set holds at most 31 parts");
        let wakers = (0..parts)
            .map(|index| {
                Waker::from(Arc::new(Part {
                    bit: 1 << index,
                    holder: Arc::clone(&holder),
                }))
            })
            .collect();
        Self {
            holder,
            wakers,
            registered: None,
            pending: u32::MAX >> (32 - parts.max(1)),
        }
    }

    /// Takes the wakes since the last turn, and leaves `cx`'s task to be woken by the next.
    #[inline]
    pub(crate) fn turn(&mut self, cx: &Context<'_>) {
        let flags = self.holder.flags();
        // Registered before the flags are read: a wake in between is not lost.
        register_once(&mut self.registered, &flags.outer, cx);
        // A load first: most turns find no part woken, and a load leaves the line shared.
        if flags.woken.load(Ordering::Acquire) != 0 {
            self.pending |= flags.woken.swap(0, Ordering::AcqRel) & !HOLDER_WOKE;
            // The wake took the registration: registered again, so that the next finds it.
            flags.outer.register(cx.waker());
        }
    }

    /// Runs part `index` with its own waker when it has woken since it last ran; `Pending`
    /// otherwise, without a look at anything shared.
    #[inline]
    pub(crate) fn poll<T>(
        &mut self,
        index: usize,
        part: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        let bit = 1 << index;
        if self.pending & bit == 0 {
            return Poll::Pending;
        }
        self.pending &= !bit;
        part(&mut Context::from_waker(&self.wakers[index]))
    }

    /// Returns whether part `index` would run in this turn.
    pub(crate) fn is_pending(&self, index: usize) -> bool {
        self.pending & (1 << index) != 0
    }

    /// Leaves part `index` out of the turns until its waker is called or it is rearmed: the task
    /// has nothing there to poll.
    pub(crate) fn leave_out(&mut self, index: usize) {
        self.pending &= !(1 << index);
    }

    /// Has part `index` run in the next turn, woken or not: the task changed what it waits on.
    pub(crate) fn rearm(&mut self, index: usize) {
        self.pending |= 1 << index;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Notify;

    #[tokio::test]
    async fn it_ends_when_the_inner_future_wakes_and_only_then() {
        let notify = Arc::new(Notify::new());
        let waiting = Arc::clone(&notify);
        let mut woken = Box::pin(Woken::new(async move { waiting.notified().await }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        // Not woken: the inner future is not polled again, and stays pending.
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        assert!(!woken.wakes.flag.woken.load(Ordering::Acquire));
        notify.notify_one();
        assert!(woken.wakes.flag.woken.load(Ordering::Acquire));
        assert!(woken.as_mut().poll(&mut cx).is_ready());
    }

    /// Counts its wakes.
    struct Count(std::sync::atomic::AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Turns that register nothing (the same task, not woken) still leave a waker for the next
    /// wake, and each wake taken leaves one for the one after.
    #[tokio::test]
    async fn every_wake_finds_the_task_however_many_turns_passed() {
        let notify = Arc::new(Notify::new());
        let waiting = Arc::clone(&notify);
        let mut woken = Box::pin(Woken::new(async move {
            waiting.notified().await;
            waiting.notified().await;
        }));
        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        for _ in 0..3 {
            assert!(woken.as_mut().poll(&mut cx).is_pending());
        }
        notify.notify_one();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // The first wait ends, the second begins: pending again, and its wake is not lost.
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        notify.notify_one();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        assert!(woken.as_mut().poll(&mut cx).is_ready());
        // Another task's waker is registered in its place.
        let other = Arc::new(Count(0.into()));
        let mut woken = Box::pin(Woken::new(std::future::pending::<()>()));
        assert!(woken.as_mut().poll(&mut cx).is_pending());
        let other_waker = Waker::from(Arc::clone(&other));
        assert!(
            woken
                .as_mut()
                .poll(&mut Context::from_waker(&other_waker))
                .is_pending()
        );
        woken.wakes.flag.wake_by_ref();
        assert_eq!(other.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn it_wakes_the_task_that_awaits_it() {
        let notify = Arc::new(Notify::new());
        let waiting = Arc::clone(&notify);
        let task = tokio::spawn(Woken::new(async move { waiting.notified().await }));
        tokio::task::yield_now().await;
        notify.notify_one();
        assert!(task.await.is_ok());
    }

    /// Runs a part in the first turn, then only after its own waker was called; keeps a wake for
    /// the next turn when a turn stops before the part; wakes the task at each wake.
    #[cfg(feature = "ws")]
    #[test]
    fn a_set_runs_each_part_after_its_own_wake() {
        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(Arc::clone(&count));
        let cx = Context::from_waker(&waker);
        let mut set = WakeSet::new(3);
        let mut wakers: Vec<Option<Waker>> = vec![None, None, None];
        let mut runs = [0; 3];
        // One turn of the task, looking at the parts before `upto`.
        let mut turn = |set: &mut WakeSet, upto: usize| {
            set.turn(&cx);
            for (index, slot) in wakers.iter_mut().enumerate().take(upto) {
                let _ = set.poll(index, |cx| {
                    runs[index] += 1;
                    *slot = Some(cx.waker().clone());
                    Poll::<()>::Pending
                });
            }
            (runs, wakers.clone())
        };
        let (runs, wakers) = turn(&mut set, 3);
        assert_eq!(runs, [1, 1, 1]);
        // Nothing woke: nothing runs.
        assert_eq!(turn(&mut set, 3).0, [1, 1, 1]);
        // Part 2 wakes, and the task with it; a turn that stops after part 0 keeps its wake.
        wakers[2].as_ref().unwrap().wake_by_ref();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(turn(&mut set, 1).0, [1, 1, 1]);
        assert_eq!(turn(&mut set, 3).0, [1, 1, 2]);
        // A wake after a turn took the last still finds the task; a rearmed part runs unwoken.
        wakers[0].as_ref().unwrap().wake_by_ref();
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
        set.rearm(1);
        assert_eq!(turn(&mut set, 3).0, [2, 2, 2]);
        wakers[1].as_ref().unwrap().wake_by_ref();
        assert_eq!(count.0.load(Ordering::SeqCst), 3);
    }

    /// Runs no part on a wake of the flags' holder, and leaves the task, in the turn after it, to
    /// be woken by the next wake (the holder's took the registration).
    #[cfg(feature = "ws")]
    #[test]
    fn a_holder_wake_runs_no_part_and_the_next_still_finds_the_task() {
        let count = Arc::new(Count(0.into()));
        let waker = Waker::from(Arc::clone(&count));
        let cx = Context::from_waker(&waker);
        let flags = Arc::new(SetFlags::default());
        let mut set = WakeSet::within(Arc::clone(&flags), 1);
        set.turn(&cx);
        assert_eq!(set.poll(0, |_| Poll::Ready(())), Poll::Ready(()));
        flags.wake(HOLDER_WOKE);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        set.turn(&cx);
        assert!(!set.is_pending(0));
        flags.wake(HOLDER_WOKE);
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
    }
}
