//! What an algorithm built on an inner PPO agent (`inner: Ppo<A, C, OBS,
//! N>`) only forwards to it, written once: its accessors, its
//! [`Learner`](crate::train::Learner) (an iteration is its own `collect`
//! and `update`), its [`Controller`](crate::policy::Controller) and its
//! checkpoint section (the inner agent's, under its own kind). REINFORCE
//! and TRPO are such algorithms: they differ from PPO in what they collect
//! and how they update, not in what they keep.

/// The forwarding parts of `$wrapper<A, C, OBS, N>` around `inner: Ppo`
/// (see the [module docs](self)). `loading` runs before the inner
/// section's load, with the agent as `$s` and the reader as `$r` (e.g.
/// TRPO's configuration, which the inner agent follows). It runs on the
/// dry pass and on the committing pass alike: a change to the agent must
/// be guarded by `$r.commit()`, and the block must end normally (`?` for
/// a refusal) so that the inner section is read after it.
macro_rules! wraps_ppo {
    (
        $wrapper:ident,
        kind: $kind:expr,
        loading(|$s:ident, $r:ident| $loading:block) $(,)?
    ) => {
        impl<A: $crate::policy::Actor<OBS>, C: $crate::algo::Critic<OBS>, const OBS: usize, const N: usize>
            $wrapper<A, C, OBS, N>
        {
            /// Environment steps collected so far.
            pub fn steps(&self) -> u64 {
                self.inner.steps
            }

            /// The actor.
            pub fn actor(&self) -> &A {
                self.inner.actor()
            }

            /// The critic.
            pub fn critic(&self) -> &C {
                self.inner.critic()
            }

            /// Copies the deployable policy into `out` (see
            /// [`Ppo::export`](crate::algo::Ppo::export)).
            pub fn export(&self, out: &mut $crate::policy::Policy<A, OBS>) {
                self.inner.export(out);
            }

            /// A deployable copy of the policy with its frozen normaliser.
            pub fn policy(&self) -> $crate::policy::Policy<A, OBS>
            where
                A: Clone,
            {
                self.inner.policy()
            }
        }

        // One iteration: the algorithm's own collection and update.
        $crate::train::learner!(
            impl[const N: usize] $wrapper<A, C, OBS, N>,
            critic = $crate::algo::Critic<OBS>,
            stats = $crate::algo::UpdateStats,
            steps = |s| s.inner.steps,
            iterate = |s, env, cursor, rng, on_episode| {
                s.collect(env, cursor, rng, on_episode)?;
                s.update(rng)
            }
        );

        impl<A: $crate::policy::Actor<OBS>, C: $crate::algo::Critic<OBS>, const OBS: usize, const N: usize>
            $crate::policy::Controller<OBS> for $wrapper<A, C, OBS, N>
        {
            type Action = A::Action;

            /// What [`policy`](Self::policy)`().act(obs)` returns, without
            /// the copy.
            fn act(
                &self,
                obs: &nalgebra::SVector<f32, OBS>,
            ) -> ::core::result::Result<A::Action, $crate::Error> {
                $crate::policy::Controller::act(&self.inner, obs)
            }
        }

        /// The inner PPO agent's section under this algorithm's kind.
        impl<A: $crate::policy::Actor<OBS>, C: $crate::algo::Critic<OBS>, const OBS: usize, const N: usize>
            $crate::checkpoint::AgentState for $wrapper<A, C, OBS, N>
        {
            const KIND: u32 = $kind;
            const OBS: usize = OBS;
            type Saved = <$crate::algo::Ppo<A, C, OBS, N> as $crate::checkpoint::AgentState>::Saved;

            fn fingerprint() -> u32 {
                $crate::checkpoint::fold(
                    <$crate::algo::Ppo<A, C, OBS, N> as $crate::checkpoint::AgentState>::fingerprint(),
                    Self::KIND,
                )
            }

            fn save_state(
                &self,
                w: &mut $crate::checkpoint::Writer<'_>,
            ) -> ::core::result::Result<(), $crate::Error> {
                self.inner.save_state(w)
            }

            fn load_state(
                &mut self,
                r: &mut $crate::checkpoint::Reader<'_>,
            ) -> ::core::result::Result<(), $crate::Error> {
                let ($s, $r) = (&mut *self, &mut *r);
                $loading
                self.inner.load_state(r)
            }
        }
    };
}
pub(crate) use wraps_ppo;
