//! The safety net's fault drills (`microrl::safety::drill::cartpole`) with
//! the firmware's 4-32-32-1 CartPoleContinuous policy, as the desktop runs
//! them (`tests/faults.rs`) and as `fault-drill` logs them on the MCU
//! (`tests/firmware.rs`): one line per drill with every counter and switch
//! of the pieces, the recorded lines (`tests/fixtures/fault-drill.txt`),
//! and each drill's claims.
//!
//! Everything is deterministic, so a drill's line is compared with the
//! recorded one whole: a safety mechanism that is removed, or that acts at
//! another tick, changes a figure of some drill (`tests/removals/run`
//! removes each in turn). The claims say what the figures mean — the
//! guarded run holds the plant and beats the fallback alone, each
//! mechanism switched or refused when and as often as its fault demands —
//! and are checked on the MCU's own figures too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use microrl::env::CartPoleContinuous;
use microrl::safety::drill::cartpole::{self, EPISODES, FAULT_AT, Scenario};
use microrl::safety::drill::{Arm, Drill, Fault, NEVER};
use microrl::{Params, agent, serialize};

/// `fault-drill`'s policy: `agent::Policy<CartPoleContinuous, 32>`.
pub type Policy = agent::Policy<CartPoleContinuous, 32>;

/// The tensors a faulty update corrupts: the actor network's.
pub const WEIGHT_TENSORS: usize = <microrl::nn::Mlp<4, 32, 1> as Params>::TENSORS;

/// The arms, in the order `fault-drill` runs them.
pub const ARMS: [Arm; 3] = [Arm::Guarded, Arm::Fallback, Arm::Unguarded];

/// The trial's window of the drills' rollback (`RollbackConfig::new(200, …)`).
const WINDOW: u32 = 200;
/// The supervisor's performance warm-up in the drills.
const PERF_WARMUP: u32 = 100;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The committed policy file (`firmware-example/policies/`).
pub fn policy_path() -> PathBuf {
    root().join("../firmware-example/policies/cartpole-continuous-32.mrlp")
}

/// The recorded lines.
pub fn record_path() -> PathBuf {
    root().join("fixtures/fault-drill.txt")
}

/// The committed policy.
///
/// # Panics
/// When the file is missing or does not load.
pub fn policy() -> Box<Policy> {
    let blob = std::fs::read(policy_path()).expect("the committed drill policy");
    let mut policy = Box::new(Policy::ZERO);
    serialize::load(&mut *policy, &blob).expect("the drill policy loads");
    policy
}

/// One drill on the desktop, as `fault-drill` runs it.
///
/// # Errors
/// The drill stopped: the plant refused a command.
pub fn try_drill(
    trained: &Policy,
    scenario: Scenario,
    fault: Fault,
    arm: Arm,
) -> Result<Drill<EPISODES>, microrl::Error> {
    let mut candidate = Box::new(trained.clone());
    let mut store = vec![0u8; serialize::encoded_len::<Policy>()];
    cartpole::drill(
        scenario,
        fault,
        arm,
        trained,
        &mut candidate,
        &mut store,
        WEIGHT_TENSORS,
    )
}

/// [`try_drill`], which must not stop.
///
/// # Panics
/// When the drill stops, with `STOPPED drill …: <error>`.
pub fn drill(trained: &Policy, scenario: Scenario, fault: Fault, arm: Arm) -> Drill<EPISODES> {
    try_drill(trained, scenario, fault, arm)
        .unwrap_or_else(|e| panic!("STOPPED {}: {e}", head(scenario, fault, arm)))
}

/// Every drill `fault-drill` runs, in its order.
pub fn all() -> Vec<(Scenario, Fault, Arm)> {
    let mut out = Vec::new();
    for scenario in Scenario::ALL {
        for &fault in scenario.faults() {
            for arm in ARMS {
                out.push((scenario, fault, arm));
            }
        }
    }
    out
}

/// `drill <scenario> <fault> <arm>`: what a line starts with.
pub fn head(scenario: Scenario, fault: Fault, arm: Arm) -> String {
    format!("drill {scenario:?} {fault:?} {arm:?}")
}

fn list(xs: &[u32]) -> String {
    let items: Vec<String> = xs.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// The line `fault-drill` logs for this drill (after `INFO `).
pub fn line(scenario: Scenario, fault: Fault, arm: Arm, d: &Drill<EPISODES>) -> String {
    let mut returns = 0x811c_9dc5u32;
    for r in d.returns {
        for b in r.to_bits().to_le_bytes() {
            returns = (returns ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
    let (sv, sh, rb, wd) = (d.supervisor, d.shield, d.rollback, d.watchdog);
    format!(
        "{}: returns {} returns_fnv {returns:#010x} score {:#010x} score_milli {} held {} intact {} \
         refusals {} to_fallback {} non_finite {} stuck {} envelope {} performance {} policy_error {} \
         refused {} to_learned {} fallback_ticks {} nan_readings {} stuck_readings {} shield {} \
         shield_nan {} shield_safe_set {} published {} wd_non_finite {} overrun {} trials {} promoted {} rolled_back {} \
         writes {} corrupt {} switch_at {} restored_at {} events {:#010x}",
        head(scenario, fault, arm),
        list(&d.returns.map(|r| r as u32)),
        d.mean_score.to_bits(),
        (d.mean_score * 1000.0) as i32,
        d.held,
        d.policy_intact,
        d.refusals,
        sv.to_fallback,
        sv.non_finite,
        sv.stuck,
        sv.envelope,
        sv.performance,
        sv.policy_error,
        sv.refused,
        sv.to_learned,
        sv.ticks_fallback,
        sv.non_finite_obs,
        sv.stuck_obs,
        sh.interventions,
        sh.non_finite,
        sh.safe_set,
        wd.published,
        wd.non_finite,
        wd.overrun,
        rb.trials,
        rb.promoted,
        rb.rolled_back,
        rb.writes,
        rb.corrupt,
        list(&d.switch_at),
        list(&d.restored_at),
        d.events,
    )
}

/// The recorded lines by [`head`].
///
/// # Panics
/// When the file is missing.
pub fn record() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(record_path()).expect("tests/fixtures/fault-drill.txt");
    text.lines()
        .filter(|l| l.starts_with("drill "))
        .map(|l| {
            let head = l.split(':').next().unwrap_or(l).to_owned();
            (head, l.to_owned())
        })
        .collect()
}

/// Writes `lines` as the record (`MICRORL_BLESS=1`).
///
/// # Panics
/// When the file cannot be written.
pub fn bless(lines: &[String]) {
    let mut text = String::from(
        "# The fault drills' figures, recorded: one line per drill as `fault-drill` logs it on the MCU\n\
         # and tests/faults.rs computes it on the desktop. Written by\n\
         # `MICRORL_BLESS=1 cargo test -p microrl-tests --test faults drill_record`.\n",
    );
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(record_path(), text).expect("write tests/fixtures/fault-drill.txt");
}

/// `true` when `MICRORL_BLESS=1`.
pub fn blessing() -> bool {
    std::env::var_os("MICRORL_BLESS").is_some_and(|v| v == "1")
}

/// A drill's figures, read back from its line.
#[derive(Clone, Debug)]
pub struct Figures {
    /// The line.
    pub line: String,
    fields: BTreeMap<String, String>,
}

impl Figures {
    /// Parses a line (`drill … : key value …`; lists in brackets).
    ///
    /// # Panics
    /// On a line without `: `.
    pub fn parse(line: &str) -> Self {
        let (_, rest) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("not a drill line: `{line}`"));
        let mut fields = BTreeMap::new();
        let mut rest = rest.trim();
        while let Some((key, tail)) = rest.split_once(' ') {
            let tail = tail.trim_start();
            let (value, next) = if tail.starts_with('[') {
                let end = tail.find(']').map_or(tail.len(), |i| i + 1);
                tail.split_at(end)
            } else {
                tail.split_once(' ').unwrap_or((tail, ""))
            };
            fields.insert(key.to_owned(), value.to_owned());
            rest = next.trim_start();
        }
        Self {
            line: line.to_owned(),
            fields,
        }
    }

    fn raw(&self, key: &str) -> &str {
        self.fields
            .get(key)
            .unwrap_or_else(|| panic!("no `{key}` in `{}`", self.line))
    }

    /// An integer figure.
    ///
    /// # Panics
    /// When missing or not an integer.
    pub fn n(&self, key: &str) -> i64 {
        self.raw(key)
            .parse()
            .unwrap_or_else(|e| panic!("`{key}` in `{}`: {e}", self.line))
    }

    /// A flag.
    ///
    /// # Panics
    /// When missing or not `true`/`false`.
    pub fn flag(&self, key: &str) -> bool {
        match self.raw(key) {
            "true" => true,
            "false" => false,
            other => panic!("`{key}` is `{other}` in `{}`", self.line),
        }
    }

    /// A list figure (`[a, b, …]`).
    ///
    /// # Panics
    /// When missing or not a list of integers.
    pub fn list(&self, key: &str) -> Vec<u32> {
        self.raw(key)
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|e| panic!("`{key}` in `{}`: {e}", self.line))
            })
            .collect()
    }
}

/// The claims of one drill — what its figures must show — given the figures
/// of its three arms and of the same scenario's nominal guarded run;
/// returns the claims that do not hold (empty: all hold).
pub fn claims(
    scenario: Scenario,
    fault: Fault,
    guarded: &Figures,
    fallback: &Figures,
    unguarded: &Figures,
    nominal: &Figures,
) -> Vec<String> {
    let mut failed = Vec::new();
    let mut claim = |ok: bool, what: &str| {
        if !ok {
            failed.push(format!("{scenario:?} {fault:?}: {what}"));
        }
    };
    let g = guarded;
    let n = EPISODES as i64;
    let ep = |x: u32| vec![x; EPISODES];
    // Every drill: the guarded run holds the plant in its envelope and
    // returns at least the fallback alone in every episode.
    claim(g.flag("held"), "the guarded run held the envelope");
    let (rg, rf) = (g.list("returns"), fallback.list("returns"));
    claim(
        rg.iter().zip(&rf).all(|(a, b)| a >= b),
        "the guarded return is at least the fallback's in every episode",
    );
    if scenario == Scenario::Relay {
        // The fallback alone costs: the guarded run scores better.
        claim(
            g.n("score_milli") > fallback.n("score_milli"),
            "the guarded run scores better than the fallback alone",
        );
    }
    // The episodes whose fault meets the learned policy in control: all in
    // `Relay`; in `Tuned` only the first, as the performance check hands
    // the tuned PD control at tick 375 of episode 0 and keeps it there
    // (latched until a publish).
    let hit: Vec<u32> = match scenario {
        Scenario::Relay => ep(0),
        Scenario::Tuned => (0..EPISODES).map(|e| u32::from(e > 0) * NEVER).collect(),
    };
    let at = |tick: u32| -> Vec<u32> {
        hit.iter()
            .map(|&h| if h == 0 { tick } else { NEVER })
            .collect()
    };
    let hits = hit.iter().filter(|&&h| h == 0).count() as i64;
    let same_control = |claim: &mut dyn FnMut(bool, &str)| {
        for key in [
            "to_fallback",
            "fallback_ticks",
            "switch_at",
            "score",
            "returns_fnv",
        ] {
            claim(
                g.raw(key) == nominal.raw(key),
                &format!("a refused update leaves control as in the nominal run ({key})"),
            );
        }
    };
    match fault {
        Fault::Nominal => {
            claim(g.n("published") == 0, "nothing published");
            claim(g.flag("intact"), "the trained policy acts throughout");
            if scenario == Scenario::Relay {
                claim(
                    g.n("fallback_ticks") < n * 500 / 4,
                    "the learned policy acts at least 3 ticks in 4",
                );
                claim(
                    g.n("performance") == 0,
                    "no performance switch: the learned policy beats the fallback",
                );
            } else {
                claim(
                    g.n("performance") == 1,
                    "one performance switch: the learned policy regulates worse than the tuned PD",
                );
            }
        }
        Fault::PoisonedUpdate => {
            claim(
                g.n("wd_non_finite") == n && g.n("refusals") == n,
                "the watchdog refused every poisoned update for its NaN weights",
            );
            claim(g.n("published") == 0, "nothing published");
            claim(g.flag("intact"), "the trained policy kept acting");
            same_control(&mut claim);
            claim(
                !unguarded.flag("held"),
                "unguarded, the poisoned policy loses the pole",
            );
        }
        Fault::OverrunUpdate => {
            claim(
                g.n("overrun") == n && g.n("refusals") == n,
                "the watchdog noticed every overrun and refused its result",
            );
            claim(g.n("published") == 0, "nothing published");
            claim(g.flag("intact"), "the trained policy kept acting");
            same_control(&mut claim);
            claim(
                !unguarded.flag("held"),
                "unguarded, the late update loses the pole",
            );
        }
        Fault::NanSensors => {
            claim(
                g.n("non_finite") == hits,
                "one switch to the fallback for NaN readings per episode the learned policy acts in",
            );
            claim(
                g.list("switch_at") == at(FAULT_AT),
                "on the first NaN reading",
            );
            claim(g.n("nan_readings") == 10 * n, "every NaN reading seen");
            claim(
                g.n("shield_nan") >= 10 * n,
                "no command while the reading is NaN: the shield's safe action",
            );
            claim(g.flag("intact"), "the trained policy acts again");
        }
        Fault::StuckSensor => {
            claim(
                g.n("stuck") == hits,
                "one switch to the fallback for a stuck sensor per episode the learned policy acts in",
            );
            // The reading of tick 99 repeats from tick 100: the 5th identical one is tick 103.
            claim(
                g.list("switch_at") == at(FAULT_AT + 3),
                "on the 5th identical reading",
            );
            claim(
                g.n("stuck_readings") == 17 * n,
                "every stuck reading from the 5th on seen",
            );
            claim(g.flag("intact"), "the trained policy acts again");
            if scenario == Scenario::Relay {
                claim(
                    !fallback.flag("held"),
                    "the relay alone, pushing at full force on the frozen reading until it is judged stuck, loses the pole",
                );
            }
        }
        Fault::DivergingUpdate => {
            claim(g.n("published") == n, "every diverged update published");
            claim(
                g.n("rolled_back") == n && g.n("envelope") >= n,
                "each one rolled back when it drove the plant out of the envelope",
            );
            claim(
                g.list("restored_at").iter().all(|&t| t <= FAULT_AT + 10),
                "within 10 ticks of the publish",
            );
            claim(g.flag("intact"), "the trained policy restored bit for bit");
            claim(
                !unguarded.flag("held"),
                "unguarded, the diverged policy loses the pole",
            );
        }
        Fault::DivergingCorruptStore => {
            claim(
                g.n("corrupt") == n && g.n("rolled_back") == 0,
                "every restore refused on the store's CRC, nothing loaded",
            );
            claim(
                !g.flag("intact"),
                "the acting policy is not the trained one (it cannot be restored)",
            );
            claim(
                g.n("fallback_ticks") >= n * (500 - i64::from(FAULT_AT) - 25),
                "the fallback holds control after the failed restore",
            );
        }
        Fault::RegressedUpdate => {
            claim(g.n("published") == n, "every regressed update published");
            claim(
                g.n("rolled_back") == n && g.n("promoted") == 0,
                "each one rolled back, none promoted",
            );
            claim(
                g.list("restored_at") == ep(FAULT_AT + WINDOW),
                "by the trial's verdict when its window filled",
            );
            claim(
                g.n("performance") == 0,
                "not by the performance check: it does better than the fallback",
            );
            claim(g.flag("intact"), "the trained policy restored bit for bit");
            claim(
                unguarded.n("score_milli") < g.n("score_milli"),
                "the regression is real: unguarded, it scores worse",
            );
        }
        Fault::UnderperformingUpdate => {
            claim(
                g.n("published") == n,
                "every underperforming update published",
            );
            claim(g.n("rolled_back") == n, "each one rolled back");
            claim(
                g.n("performance") >= 1
                    && g.list("restored_at").iter().min() == Some(&(FAULT_AT + PERF_WARMUP)),
                "by the performance check, as soon as its warm-up ended",
            );
            claim(
                g.list("restored_at")
                    .iter()
                    .all(|&t| t != NEVER && t <= FAULT_AT + WINDOW),
                "at the latest when the trial's window filled",
            );
            claim(g.flag("intact"), "the trained policy restored bit for bit");
        }
    }
    failed
}
