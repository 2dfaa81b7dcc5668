//! KL-anchored PPO's part of a checkpoint: the PPO agent's state, the
//! reference policy (so a resume needs no file besides the checkpoint) and
//! the current `β`.

use super::Anchored;
use crate::algo::ppo::persist::check_kl_coef;
use crate::algo::{Actor, Critic, Policy, Ppo};
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::error::Error;

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> AgentState
    for Anchored<A, C, OBS, N>
{
    const KIND: u32 = 4;
    const OBS: usize = OBS;
    /// The fields after the PPO agent's section: the reference and `β`.
    type Saved = (Policy<A, OBS>, f32);
    const LEN: usize = <Ppo<A, C, OBS, N> as AgentState>::LEN + <Self::Saved as Fields>::LEN;

    fn fingerprint() -> u32 {
        let h = fold(<Ppo<A, C, OBS, N> as AgentState>::fingerprint(), Self::KIND);
        <Self::Saved as Fields>::fold_shapes(h)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.ppo.save_state(w)?;
        <Self::Saved as Fields>::save(w, (&self.reference, &self.kl_coef))
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.anchor.validate()?;
        self.ppo.load_state(r)?;
        let mut kl_coef = 0.0;
        <Self::Saved as Fields>::load(r, (&mut self.reference, &mut kl_coef))?;
        check_kl_coef(kl_coef)?;
        if r.commit() {
            self.kl_coef = kl_coef;
        }
        Ok(())
    }
}
