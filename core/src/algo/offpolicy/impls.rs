//! The trait impls SAC and TD3 share, written once as a macro
//! ([`offpolicy_impls`]) that each agent's `learner.rs` invokes with its
//! generics: [`OffPolicy`](super::OffPolicy), the lagged schedule's learner
//! side, [`Agent`](crate::train::Agent), [`Learner`](crate::train::Learner)
//! and [`Controller`](crate::policy::Controller).

/// [`OffPolicy`](super::OffPolicy), [`Agent`](crate::train::Agent),
/// [`Learner`](crate::train::Learner) and [`Controller`](crate::policy::Controller)
/// for an agent with the fields SAC and TD3 share (`config` with
/// `validate` and `schedule`, `space`, `replay`, `steps`) and inherent
/// `init`, `explore`, `update` and `export`: one text for both, invoked
/// from each agent's `learner.rs` with its generics (which name `OBS`,
/// `ACT`, `CAP` and `BATCH`), its statistics, its deployed policy and its
/// deterministic action.
///
/// As the training loop sees them, **one iteration is one environment
/// step** ([`OffPolicy::step`](super::OffPolicy::step)) and the gradient steps it triggers, as for
/// the online actor-critic: the trainer's evaluation interval, hooks, early
/// stop and checkpoints then fall on any environment step. An iteration's
/// statistics are those of its last gradient step, `None` when it trained
/// nothing (the warm-up of `learning_starts` steps, or between training
/// rounds of `train_freq`).
macro_rules! offpolicy_impls {
    (
        impl[$($gen:tt)*] $ty:ty where [$($bounds:tt)*],
        stats = $stats:ty,
        policy = $policy:ty,
        actor = $actor:ty,
        publish = |$ps:ident, $out:ident| $publish:expr,
        act = |$s:ident, $obs:ident| $act:expr $(,)?
    ) => {
        /// The learning loop's step ([`OffPolicy::step`](crate::algo::offpolicy::OffPolicy::step)) on this agent.
        impl<$($gen)*> $crate::algo::offpolicy::OffPolicy<OBS, ACT> for $ty
        where
            $($bounds)*
        {
            type Stats = $stats;
            fn schedule(&self) -> Result<$crate::algo::offpolicy::Schedule, $crate::Error> {
                self.config.validate(CAP, BATCH)?;
                Ok(self.config.schedule())
            }

            fn explore_action<R: rand_core::Rng + ?Sized>(
                &self,
                obs: &nalgebra::SVector<f32, OBS>,
                rng: &mut R,
            ) -> Result<nalgebra::SVector<f32, ACT>, $crate::Error> {
                Ok(self.explore(obs, rng)?.0)
            }

            fn space(&self) -> &$crate::env::Continuous<ACT> {
                &self.space
            }

            fn record(
                &mut self,
                transition: &$crate::algo::replay::Transition<OBS, ACT>,
            ) -> Result<u64, $crate::Error> {
                self.replay.push(transition)?;
                self.steps = self.steps.saturating_add(1);
                Ok(self.steps)
            }

            fn record_mark(&self) -> ($crate::algo::replay::ReplayMark<OBS, ACT>, u64) {
                (self.replay.mark(), self.steps)
            }

            fn forget(&mut self, mark: &($crate::algo::replay::ReplayMark<OBS, ACT>, u64)) {
                self.replay.rewind(&mark.0);
                self.steps = mark.1;
            }

            fn train_once<R: rand_core::Rng + ?Sized>(
                &mut self,
                rng: &mut R,
            ) -> Result<$stats, $crate::Error> {
                self.update(rng)
            }

            fn env_steps(&self) -> u64 {
                self.steps
            }
        }

        /// The learner side of the lagged schedule: a block learned tick by
        /// tick.
        impl<$($gen)*> $crate::algo::lagged::LaggedLearner<OBS> for $ty
        where
            $($bounds)*
        {
            type Behaviour = $crate::algo::offpolicy::Explorer<$actor, ACT>;
            type Stats = Option<$stats>;

            const ZERO: Self = <$ty>::ZERO;
            const ZERO_BEHAVIOUR: Self::Behaviour = $crate::algo::offpolicy::Explorer::zero();
            const ZERO_ACTION: nalgebra::SVector<f32, ACT> =
                <nalgebra::SVector<f32, ACT> as $crate::params::Params>::ZERO;

            /// The actor's weights, the bounds and the warm-up length.
            fn publish(&self, $out: &mut Self::Behaviour) {
                let $ps = self;
                $publish;
                $out.space = self.space;
                $out.learning_starts = self.config.schedule().learning_starts;
            }

            fn ticks_learned(&self) -> u64 {
                self.steps
            }

            fn learn_block<R: rand_core::Rng + ?Sized>(
                &mut self,
                ticks: &[$crate::algo::Tick<OBS, nalgebra::SVector<f32, ACT>>],
                rng: &mut R,
            ) -> Result<(Option<$stats>, u64), $crate::Error> {
                $crate::algo::lagged::learn_ticks(self, ticks, rng)
            }
        }

        /// The learner side per tick:
        /// [`OffPolicy::ingest`](crate::algo::offpolicy::OffPolicy::ingest)
        /// and the gradient steps it makes; a block's statistics are its
        /// last gradient step's.
        impl<$($gen)*> $crate::algo::lagged::TickLearner<OBS> for $ty
        where
            $($bounds)*
        {
            const NO_STATS: Option<$stats> = None;

            fn ingest_tick<R: rand_core::Rng + ?Sized>(
                &mut self,
                tick: &$crate::algo::Tick<OBS, nalgebra::SVector<f32, ACT>>,
                rng: &mut R,
                stats: &mut Option<$stats>,
            ) -> Result<u64, $crate::Error> {
                use $crate::algo::offpolicy::OffPolicy;
                *stats = self.ingest(tick, rng)?.or(*stats);
                // `ingest` validated the configuration.
                Ok(u64::from(self.config.schedule().updates_after(self.steps)))
            }

            fn block_stats(stats: Option<$stats>, _ticks: usize) -> Option<$stats> {
                stats
            }
        }

        impl<$($gen)*> $crate::train::Agent for $ty
        where
            $($bounds)*
        {
            type Policy = $policy;
            type Stats = Option<$stats>;

            fn steps(&self) -> u64 {
                self.steps
            }

            /// The gradient steps of the last iteration: `gradient_steps` on
            /// a training round, 0 during the warm-up and between rounds (the
            /// trainer reads it right after each iteration, so its count of
            /// updates is the agent's `n_updates`).
            fn updates_per_iteration(&self) -> u64 {
                u64::from(self.config.schedule().updates_after(self.steps))
            }

            fn export(&self, out: &mut $policy) {
                <$ty>::export(self, out);
            }
        }

        impl<E, $($gen)*> $crate::train::Learner<E> for $ty
        where
            $($bounds)*
            E: $crate::env::Env<
                Obs = nalgebra::SVector<f32, OBS>,
                Space = $crate::env::Continuous<ACT>,
            >,
        {
            fn init<R: rand_core::Rng + ?Sized>(
                &mut self,
                env: &E,
                rng: &mut R,
            ) -> Result<(), $crate::Error> {
                <$ty>::init(self, env, rng)
            }

            fn iterate<R: rand_core::Rng + ?Sized>(
                &mut self,
                env: &mut E,
                cursor: &mut $crate::algo::Cursor<E::Obs>,
                rng: &mut R,
                on_episode: &mut dyn FnMut($crate::algo::Episode),
            ) -> Result<Option<$stats>, $crate::Error> {
                $crate::algo::offpolicy::OffPolicy::step(self, env, cursor, rng, on_episode)
            }
        }

        impl<$($gen)*> $crate::policy::Controller<OBS> for $ty
        where
            $($bounds)*
        {
            type Action = nalgebra::SVector<f32, ACT>;

            /// The deterministic action, scaled to the bounds.
            fn act(
                &self,
                $obs: &nalgebra::SVector<f32, OBS>,
            ) -> Result<nalgebra::SVector<f32, ACT>, $crate::Error> {
                let $s = self;
                $act
            }
        }
    };
}
pub(crate) use offpolicy_impls;
