//! This process's threads by name: how a run counts the threads it started, apart from
//! those it did not (a test harness starts one per test, whenever it likes).

use std::time::{Duration, Instant};

/// The names of this process's threads whose name starts with `prefix` (from
/// `/proc/self/task/*/comm`; a thread that ends while it is read is left out, and so is one
/// that has not yet named itself: a thread takes its name as it starts).
pub fn threads_named(prefix: &str) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|name| name.trim_end().to_string())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// [`threads_named`] once it has had up to `deadline` to come down to at most `want`: a
/// joined thread is still listed for a moment (the kernel wakes the joiner before it
/// releases the task).
pub fn threads_named_settled(prefix: &str, want: usize, deadline: Duration) -> Vec<String> {
    let until = Instant::now() + deadline;
    loop {
        let names = threads_named(prefix);
        if names.len() <= want || Instant::now() >= until {
            return names;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_thread_is_found_while_it_runs_and_not_after_it_is_joined() {
        // A thread names itself as it starts, so it is listed by its name once it runs.
        let (started, running) = std::sync::mpsc::channel::<()>();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("taskstest-named".into())
            .spawn(move || {
                started.send(()).unwrap();
                wait.recv()
            })
            .unwrap();
        running.recv().unwrap();
        assert_eq!(threads_named("taskstest-"), ["taskstest-named"]);
        go.send(()).unwrap();
        h.join().unwrap().unwrap();
        assert!(threads_named_settled("taskstest-", 0, Duration::from_secs(5)).is_empty());
    }
}
