//! TRPO's part of a checkpoint: the wrapped PPO agent's state. TRPO's other
//! memory (CG vectors, the line search's `θ_old`) is rebuilt by every update.

use super::Trpo;
use crate::algo::{Actor, Critic, Ppo};
use crate::checkpoint::{AgentState, Reader, Writer, fold};
use crate::error::Error;

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> AgentState
    for Trpo<A, C, OBS, N>
{
    const KIND: u32 = 5;
    const OBS: usize = OBS;
    type Saved = <Ppo<A, C, OBS, N> as AgentState>::Saved;

    fn fingerprint() -> u32 {
        fold(<Ppo<A, C, OBS, N> as AgentState>::fingerprint(), Self::KIND)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.inner.save_state(w)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate(N)?;
        let ppo_config = self.config.to_ppo();
        ppo_config.validate(N)?;
        // The inner agent's configuration follows TRPO's only on the
        // committing pass: a load refused later (by an environment's
        // section) leaves it as it was.
        if r.commit() {
            self.inner.config = ppo_config;
        }
        self.inner.load_state(r)
    }
}
