// RLtools' own TD3 Pendulum training, vendored for microrl's peer benchmark
// (std-harness/benches/peers/run.sh). Source: rl-tools/rl-tools, tag v2.2.0
// (commit e1143309be7c5f0c655248b4b03763102f8b486c),
// src/rl/environments/pendulum/td3/cpu/standalone.cpp (the example its
// README.MD compiles) -- the headers of that tag are exactly what the
// `rltools==2.2.1` PyPI package ships under rltools/external/rl_tools/include.
// MIT licence: LICENSE-rltools beside this file.
//
// The hyper-parameters are upstream's, untouched (LOOP_CORE_PARAMETERS below;
// everything it does not set is RLtools' default: see the peers README).
// Changes, each marked `PEERS:`
//   - STEP_LIMIT comes from -DPEERS_STEP_LIMIT (default 20000, upstream's) so
//     that run.sh --quick can shrink it; REPLAY_BUFFER_CAP stays upstream's
//     (the default parameters' 10000: upstream overrides STEP_LIMIT only);
//   - the seed is argv[1], as upstream's (default 0);
//   - the JSON/CLI compile-time-overhead experiments (#ifdef NLOHMANN, ...) and
//     the "steppin yourself" print are dropped;
//   - upstream's evaluation step (NUM_EVALUATION_EPISODES 100 -- which its
//     Config<LOOP_CORE_CONFIG> does not pass on, so 10 episodes every 1000
//     steps from an RNG seeded with the training seed) and its timing step are
//     replaced by the held-out evaluation curve: every PEERS_EVAL_INTERVAL
//     steps (default 1000) a deterministic evaluation of PEERS_EVAL_EPISODES
//     (default 100) episodes whose start states come from an RNG seeded with
//     PEERS_HELD_OUT_SEED (default 1000000, a seed no training run uses; the
//     same 100 start states at every point and for every training seed). One
//     line per point:
//       PEERS_EVAL step=S cpu_s=C return=R std=D
//     where C is the process's CPU time so far minus the CPU time of the
//     curve's evaluations so far (CLOCK_PROCESS_CPUTIME_ID): the training's
//     own cost. The same evaluation after the last step is the final one; it
//     is not subtracted, and is followed by
//       PEERS_RESULT steps=S final_return=R episodes=N eval_cpu_s=E
//     E being the CPU time of the curve's evaluations (run.py subtracts it).
//   - training does not depend on the evaluations: they use their own RNG
//     and their own buffers.
//   - upstream's loop runs STEP_LIMIT + 1 environment steps (its step() stops
//     after ts.step exceeds STEP_LIMIT); kept.

#include <rl_tools/operations/cpu_mux.h>
#include <rl_tools/nn/optimizers/adam/instance/operations_generic.h>
#include <rl_tools/nn/operations_cpu_mux.h>
#include <rl_tools/nn/layers/td3_sampling/operations_generic.h>

#include <rl_tools/rl/environments/pendulum/operations_cpu.h>
#include <rl_tools/nn_models/mlp/operations_generic.h>
#include <rl_tools/nn_models/sequential/operations_generic.h>
#include <rl_tools/nn/optimizers/adam/operations_generic.h>

#include <rl_tools/rl/algorithms/td3/loop/core/config.h>
#include <rl_tools/rl/algorithms/td3/loop/core/operations_generic.h>
#include <rl_tools/rl/utils/evaluation/operations_generic.h>

#include <ctime>
#include <cstdio>
#include <string>

namespace rlt = rl_tools;

// PEERS: the budget and the evaluation curve.
#ifndef PEERS_STEP_LIMIT
#define PEERS_STEP_LIMIT 20000
#endif
#ifndef PEERS_EVAL_INTERVAL
#define PEERS_EVAL_INTERVAL 1000
#endif
#ifndef PEERS_EVAL_EPISODES
#define PEERS_EVAL_EPISODES 100
#endif
#ifndef PEERS_HELD_OUT_SEED
#define PEERS_HELD_OUT_SEED 1000000
#endif

using DEVICE = rlt::devices::DEVICE_FACTORY<>;
using RNG = DEVICE::SPEC::RANDOM::ENGINE<>;
using T = float;
using TYPE_POLICY = rlt::numeric_types::Policy<T>;
using TI = typename DEVICE::index_t;

using PENDULUM_SPEC = rlt::rl::environments::pendulum::Specification<T, TI, rlt::rl::environments::pendulum::DefaultParameters<T>>;
using ENVIRONMENT = rlt::rl::environments::Pendulum<PENDULUM_SPEC>;
struct LOOP_CORE_PARAMETERS: rlt::rl::algorithms::td3::loop::core::DefaultParameters<TYPE_POLICY, TI, ENVIRONMENT>{
    static constexpr TI STEP_LIMIT = PEERS_STEP_LIMIT; // PEERS: upstream 20000
    static constexpr TI ACTOR_NUM_LAYERS = 3;
    static constexpr TI ACTOR_HIDDEN_DIM = 64;
    static constexpr TI CRITIC_NUM_LAYERS = 3;
    static constexpr TI CRITIC_HIDDEN_DIM = 64;
};
using LOOP_CORE_CONFIG = rlt::rl::algorithms::td3::loop::core::Config<TYPE_POLICY, TI, RNG, ENVIRONMENT, LOOP_CORE_PARAMETERS>;
// PEERS: upstream's loop is core -> evaluation -> timing; here the core alone,
// the held-out curve below standing in for the other steps.
using LOOP_CONFIG = LOOP_CORE_CONFIG;
using LOOP_STATE = LOOP_CONFIG::State<LOOP_CONFIG>;

// PEERS: the held-out evaluation (the buffers upstream's evaluation step keeps).
static double cpu_seconds(){
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
struct HeldOut{
    using SPEC = rlt::rl::utils::evaluation::Specification<TYPE_POLICY, TI, ENVIRONMENT, PEERS_EVAL_EPISODES, ENVIRONMENT::EPISODE_STEP_LIMIT>;
    using ACTOR_BATCH = typename LOOP_CONFIG::NN::ACTOR_TYPE::template CHANGE_BATCH_SIZE<TI, PEERS_EVAL_EPISODES>;
    using ACTOR = typename ACTOR_BATCH::template CHANGE_CAPABILITY<rlt::nn::capability::Forward<true>>;
    rlt::rl::utils::evaluation::Buffer<rlt::rl::utils::evaluation::BufferSpecification<SPEC, true>> buffer;
    rlt::rl::utils::evaluation::Result<SPEC> result;
    typename ACTOR::template State<true> actor_state;
    typename ACTOR::template Buffer<true> actor_buffers;
    ENVIRONMENT env;
    typename ENVIRONMENT::Parameters env_parameters;
    rlt::rl::environments::DummyUI ui;
    RNG rng;
};
static void malloc_held_out(DEVICE& device, HeldOut& h){
    rlt::malloc(device, h.buffer);
    rlt::malloc(device, h.actor_state);
    rlt::malloc(device, h.actor_buffers);
    rlt::malloc(device, h.env);
    rlt::init(device, h.env);
    rlt::malloc(device, h.rng);
}
static void free_held_out(DEVICE& device, HeldOut& h){
    rlt::free(device, h.buffer);
    rlt::free(device, h.actor_buffers);
    rlt::free(device, h.env);
    rlt::free(device, h.rng);
}
static double evaluate_held_out(DEVICE& device, LOOP_STATE& ts, HeldOut& h){
    rlt::init(device, h.rng, PEERS_HELD_OUT_SEED); // the same start states every time
    rlt::evaluate(device, h.env, h.ui, rlt::get_actor(ts), h.actor_state, h.actor_buffers, h.buffer, h.result, h.rng, rlt::Mode<rlt::mode::Evaluation<>>{});
    return h.result.returns_mean;
}

int main(int argc, char** argv){
    DEVICE device;
    TI seed = 0;
    if (argc > 1) {
        seed = std::atoi(argv[1]);
    }
    std::cerr << "seed: " << seed << std::endl;
    rlt::malloc(device);
    rlt::init(device);
    LOOP_STATE ts;
    rlt::malloc(device, ts);
    rlt::init(device, ts, seed);
    HeldOut held_out;
    malloc_held_out(device, held_out);
    double eval_cpu = 0;
    while(!rlt::step(device, ts)){
        if(ts.step % PEERS_EVAL_INTERVAL == 0 && ts.step < LOOP_CORE_PARAMETERS::STEP_LIMIT){
            double t0 = cpu_seconds();
            evaluate_held_out(device, ts, held_out);
            double t1 = cpu_seconds();
            eval_cpu += t1 - t0;
            std::printf("PEERS_EVAL step=%lu cpu_s=%.4f return=%.3f std=%.3f\n", (unsigned long)ts.step, t0 - (eval_cpu - (t1 - t0)), held_out.result.returns_mean, held_out.result.returns_std);
        }
    }
    double t0 = cpu_seconds();
    evaluate_held_out(device, ts, held_out);
    std::printf("PEERS_EVAL step=%lu cpu_s=%.4f return=%.3f std=%.3f final\n", (unsigned long)ts.step, t0 - eval_cpu, held_out.result.returns_mean, held_out.result.returns_std);
    std::printf("PEERS_RESULT steps=%lu final_return=%.3f episodes=%d eval_cpu_s=%.4f\n", (unsigned long)(ts.step * LOOP_CONFIG::ENVIRONMENT_STEPS_PER_LOOP_STEP), held_out.result.returns_mean, (int)PEERS_EVAL_EPISODES, eval_cpu);
    free_held_out(device, held_out);
    rlt::free(device, ts);
    rlt::free(device);
    return 0;
}
