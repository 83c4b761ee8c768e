//! Operations the hub cancels, against the scripted phone: a queued one leaves the queue and
//! never runs, a running one stops where it is and frees the device for the next (once an
//! input command under way has landed whole), and the answer says whether its input went out.

use super::*;
use tabwire_device_kit::cancel::Cancel;

/// Waits until the phone has been called `n` times.
async fn called(phone: &Phone, n: usize) {
    while phone.calls() < n {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_cancelled_operation_leaves_the_queue_or_frees_the_device() {
    let hold = Arc::new(tokio::sync::Semaphore::new(0));
    let phone = Phone::with(|f| f.hold = Some(hold.clone()));
    let device = Arc::new(device(&phone, DeviceOptions::default()));
    let start = |op: DeviceOp, cancel: Cancel| {
        let device = device.clone();
        tokio::spawn(async move {
            device
                .execute_unless(op, holder("a"), "s", Duration::from_secs(60), &cancel)
                .await
        })
    };
    let (stop_look, look) = Cancel::new();
    let looking = start(DeviceOp::Snapshot(DeviceSnapshot { view: view() }), look);
    // The snapshot holds the device, its dump waiting.
    called(&phone, 1).await;
    let (stop_tap, tap_cancel) = Cancel::new();
    let tapping = start(tap(6, false), tap_cancel);
    let next = start(
        DeviceOp::Snapshot(DeviceSnapshot { view: view() }),
        Cancel::never(),
    );
    tokio::task::yield_now().await;

    // The queued tap is cancelled: it answers at once and never runs.
    stop_tap.cancel();
    let error = tapping.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(!error.action_may_have_occurred);
    assert_eq!(phone.calls(), 1);

    // The running snapshot is cancelled in its dump: the next operation runs at once.
    stop_look.cancel();
    let error = looking.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(!error.action_may_have_occurred, "a look sends no input");
    called(&phone, 2).await;
    hold.add_permits(1);
    next.await.unwrap().unwrap();
    assert!(phone.inputs().is_empty(), "the cancelled tap never ran");
}

#[tokio::test]
async fn a_tap_cancelled_while_it_looks_afterwards_says_it_acted() {
    let hold = Arc::new(tokio::sync::Semaphore::new(1));
    let phone = Phone::with(|f| f.hold = Some(hold.clone()));
    let device = Arc::new(device(&phone, DeviceOptions::default()));
    snapshot(&device).await.unwrap();
    // The snapshot's dump gave its permit back: take it, so the next dump waits.
    hold.acquire().await.unwrap().forget();
    let (stop, cancel) = Cancel::new();
    let tapping = {
        let device = device.clone();
        tokio::spawn(async move {
            device
                .execute_unless(tap(6, true), holder("a"), "s", SECONDS, &cancel)
                .await
        })
    };
    // The tap went out; the look after it waits for its dump.
    while phone.inputs().is_empty() || !phone.last_line().starts_with("uiautomator dump") {
        tokio::task::yield_now().await;
    }
    stop.cancel();
    let error = tapping.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(error.action_may_have_occurred, "{error:?}");
    assert_eq!(phone.inputs(), ["input tap 540 570"]);
    // No look followed the tap: its refs are gone until the next one.
    assert_eq!(
        acted(&device, tap(6, false), "a").await.unwrap_err().code,
        ErrorCode::StaleRef
    );
}

#[tokio::test]
async fn a_cancelled_operation_makes_no_more_adb_calls() {
    let phone = Phone::with(|_| {});
    let device = device(&phone, DeviceOptions::default());
    let (stop, cancel) = Cancel::new();
    stop.cancel();
    let error = device
        .execute_unless(tap(6, false), holder("a"), "s", SECONDS, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert_eq!(phone.calls(), 0);
}

/// Issue 23: an input command already under way when the cancel comes is not killed half-way
/// (a swipe's finger left down, or the device finishing it behind the next call's back): it
/// lands whole, and only then is the operation answered and the device free for the next.
#[tokio::test]
async fn an_input_command_under_way_lands_whole_before_the_answer_and_the_next_call() {
    let inputs = Arc::new(tokio::sync::Semaphore::new(0));
    let phone = Phone::with(|f| f.hold_inputs = Some(inputs.clone()));
    let device = Arc::new(device(&phone, DeviceOptions::default()));
    snapshot(&device).await.unwrap();
    let (stop, cancel) = Cancel::new();
    // A tap that would look at the screen afterwards: the look is what the cancel stops.
    let tapping = {
        let device = device.clone();
        tokio::spawn(async move {
            device
                .execute_unless(tap(6, true), holder("a"), "a", SECONDS, &cancel)
                .await
        })
    };
    // The tap's input line is under way on the device.
    while !phone.last_line().starts_with("n=0; g() {") {
        tokio::task::yield_now().await;
    }
    let calls = phone.calls();
    stop.cancel();
    let next = {
        let device = device.clone();
        tokio::spawn(async move { snapshot(&device).await })
    };
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(
        !tapping.is_finished(),
        "the answer waits for the command under way"
    );
    assert_eq!(phone.calls(), calls, "the next call waits for the device");

    // The line ends: its input landed whole, then the answer (no look after it), then the
    // next call.
    inputs.add_permits(1);
    let error = tapping.await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Cancelled);
    assert!(error.action_may_have_occurred, "{error:?}");
    assert_eq!(phone.inputs(), ["input tap 540 570"]);
    next.await.unwrap().unwrap();
    assert!(phone.calls() > calls);
}
