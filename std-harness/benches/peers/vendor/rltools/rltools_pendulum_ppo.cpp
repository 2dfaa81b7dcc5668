// RLtools' own PPO Pendulum training, vendored for microrl's peer benchmark
// (std-harness/benches/peers/run.sh). Source: rl-tools/rl-tools, tag v2.2.0
// (commit e1143309be7c5f0c655248b4b03763102f8b486c),
// src/rl/environments/pendulum/ppo/cpu/training.cpp -- the headers of that
// tag are exactly what the `rltools==2.2.1` PyPI package ships under
// rltools/external/rl_tools/include. MIT licence: LICENSE-rltools beside this file.
//
// The hyper-parameters are upstream's, untouched (LOOP_CORE_PARAMETERS below).
// Changes, each marked `PEERS:`
//   - TOTAL_STEP_LIMIT comes from -DPEERS_TOTAL_STEPS (default 300000, upstream's
//     value) so that run.sh --quick can shrink it;
//   - the final evaluation's episode count comes from -DPEERS_FINAL_EVAL_EPISODES
//     (default 1000, upstream's; run.sh passes 100, as microrl and SB3 evaluate);
//   - the seed is argv[1] (default 0, upstream's single seed);
//   - one machine-readable line `PEERS_RESULT steps=... final_return=...`.

//#define RL_TOOLS_BACKEND_DISABLE_BLAS

#include <rl_tools/operations/cpu_mux.h>

#include <rl_tools/rl/environments/pendulum/operations_cpu.h>
#include <rl_tools/rl/environment_wrappers/scale_observations/operations_generic.h>

#include <rl_tools/nn/optimizers/adam/instance/operations_generic.h>
#include <rl_tools/nn/operations_cpu_mux.h>
#include <rl_tools/nn/layers/standardize/operations_generic.h>
#include <rl_tools/nn_models/mlp_unconditional_stddev/operations_generic.h>
#include <rl_tools/nn_models/sequential/operations_generic.h>
#include <rl_tools/nn/optimizers/adam/operations_generic.h>



#include <rl_tools/rl/algorithms/ppo/loop/core/config.h>
#include <rl_tools/rl/loop/steps/evaluation/config.h>
#include <rl_tools/rl/loop/steps/timing/config.h>
#include <rl_tools/rl/algorithms/ppo/loop/core/operations_generic.h>
#include <rl_tools/rl/loop/steps/evaluation/operations_generic.h>
#include <rl_tools/rl/loop/steps/timing/operations_cpu.h>

#ifdef RL_TOOLS_ENABLE_JSON
#include <nlohmann/json.hpp>
#include <fstream>
#endif

namespace rlt = rl_tools;

// PEERS: the budget and the final evaluation's size, upstream's by default.
#ifndef PEERS_TOTAL_STEPS
#define PEERS_TOTAL_STEPS 300000
#endif
#ifndef PEERS_FINAL_EVAL_EPISODES
#define PEERS_FINAL_EVAL_EPISODES 1000
#endif

using DEVICE = rlt::devices::DEVICE_FACTORY<>;
using RNG = DEVICE::SPEC::RANDOM::ENGINE<>;
using T = float;
using TYPE_POLICY = rlt::numeric_types::Policy<float>;
using TI = typename DEVICE::index_t;

using PENDULUM_SPEC = rlt::rl::environments::pendulum::Specification<TYPE_POLICY::DEFAULT, TI, rlt::rl::environments::pendulum::DefaultParameters<TYPE_POLICY::DEFAULT>>;
using PRE_ENVIRONMENT = rlt::rl::environments::Pendulum<PENDULUM_SPEC>;
using SCALE_OBSERVATIONS_WRAPPER_SPEC = rlt::rl::environment_wrappers::scale_observations::Specification<TYPE_POLICY, TI>;
using ENVIRONMENT = rlt::rl::environment_wrappers::ScaleObservations<SCALE_OBSERVATIONS_WRAPPER_SPEC, PRE_ENVIRONMENT>;

struct LOOP_CORE_PARAMETERS: rlt::rl::algorithms::ppo::loop::core::DefaultParameters<TYPE_POLICY, TI, ENVIRONMENT>{
    static constexpr TI BATCH_SIZE = 256;
    static constexpr TI ACTOR_HIDDEN_DIM = 64;
    static constexpr TI CRITIC_HIDDEN_DIM = 64;
    static constexpr TI ON_POLICY_RUNNER_STEPS_PER_ENV = 1024;
    static constexpr TI N_ENVIRONMENTS = 4;
    static constexpr TI TOTAL_STEP_LIMIT = PEERS_TOTAL_STEPS; // PEERS: upstream 300000
    static constexpr TI STEP_LIMIT = TOTAL_STEP_LIMIT/(ON_POLICY_RUNNER_STEPS_PER_ENV * N_ENVIRONMENTS) + 1;
    static constexpr TI EPISODE_STEP_LIMIT = 200;
    using OPTIMIZER_PARAMETERS = rlt::nn::optimizers::adam::DEFAULT_PARAMETERS_PYTORCH<TYPE_POLICY>;
    struct PPO_PARAMETERS: rlt::rl::algorithms::ppo::DefaultParameters<TYPE_POLICY, TI, BATCH_SIZE>{
        static constexpr T ACTION_ENTROPY_COEFFICIENT = 0.0;
        static constexpr TI N_EPOCHS = 2;
        static constexpr T GAMMA = 0.9;
        static constexpr T INITIAL_ACTION_STD = 2.0;
        static constexpr bool NORMALIZE_OBSERVATIONS = true;
    };
};
using LOOP_CORE_CONFIG = rlt::rl::algorithms::ppo::loop::core::Config<TYPE_POLICY, TI, RNG, ENVIRONMENT, LOOP_CORE_PARAMETERS, rlt::rl::algorithms::ppo::loop::core::ConfigApproximatorsSequential>;
template <typename NEXT>
struct LOOP_EVAL_PARAMETERS: rlt::rl::loop::steps::evaluation::Parameters<TYPE_POLICY, TI, NEXT>{
    static constexpr TI EVALUATION_INTERVAL = 10;
    static constexpr TI NUM_EVALUATION_EPISODES = 100;
    static constexpr TI N_EVALUATIONS = NEXT::CORE_PARAMETERS::STEP_LIMIT / EVALUATION_INTERVAL;
};

template <TI NUM_EPISODES_FINAL_EVAL>
auto run(TI seed, bool verbose){
    DEVICE device;
#ifndef BENCHMARK
    using LOOP_EVAL_CONFIG = rlt::rl::loop::steps::evaluation::Config<LOOP_CORE_CONFIG, LOOP_EVAL_PARAMETERS<LOOP_CORE_CONFIG>>;
    using LOOP_TIMING_CONFIG = rlt::rl::loop::steps::timing::Config<LOOP_EVAL_CONFIG>;
#else
    using LOOP_TIMING_CONFIG = rlt::rl::loop::steps::timing::Config<LOOP_CORE_CONFIG>;
#endif
    if(verbose){
        rlt::log(device, LOOP_TIMING_CONFIG{});
    }
    using LOOP_CONFIG = LOOP_TIMING_CONFIG;
    using LOOP_STATE = typename LOOP_CONFIG::template State<LOOP_CONFIG>;
    LOOP_STATE ts;
    rlt::malloc(device, ts);
    rlt::init(device, ts, seed);
    while(!rlt::step(device, ts)){
    }
    using RESULT_SPEC = rlt::rl::utils::evaluation::Specification<TYPE_POLICY, TI, typename LOOP_CONFIG::ENVIRONMENT_EVALUATION, NUM_EPISODES_FINAL_EVAL, ENVIRONMENT::EPISODE_STEP_LIMIT>;
    rlt::rl::utils::evaluation::Result<RESULT_SPEC> result;
    auto actor = rlt::get_actor(ts);
    using EVALUATION_ACTOR_BATCH_SIZE = decltype(actor)::template CHANGE_BATCH_SIZE<TI, NUM_EPISODES_FINAL_EVAL>;
    using EVALUATION_ACTOR = typename EVALUATION_ACTOR_BATCH_SIZE::template CHANGE_CAPABILITY<rlt::nn::capability::Forward<>>;
    EVALUATION_ACTOR evaluation_actor;
    typename EVALUATION_ACTOR::template Buffer<> evaluation_buffer;
    rlt::malloc(device, evaluation_actor);
    rlt::malloc(device, evaluation_buffer);
    rlt::copy(device, device, actor, evaluation_actor);
    evaluate(device, ts.envs[0], ts.ui, evaluation_actor, result, ts.rng, rlt::Mode<rlt::mode::Evaluation<>>{});
    rlt::free(device, evaluation_actor);
    rlt::free(device, evaluation_buffer);
    // PEERS: the environment steps trained and the final return, for run.sh.
    std::cout << "PEERS_RESULT steps=" << ts.step * LOOP_CORE_PARAMETERS::N_ENVIRONMENTS * LOOP_CORE_PARAMETERS::ON_POLICY_RUNNER_STEPS_PER_ENV
              << " final_return=" << result.returns_mean << " episodes=" << NUM_EPISODES_FINAL_EVAL << std::endl;
    rlt::log(device, device.logger, "Final return: ", result.returns_mean);
    rlt::log(device, device.logger, "              mean: ", result.returns_mean);
    rlt::log(device, device.logger, "              std : ", result.returns_std);
    return result;
}

static constexpr TI NUM_EPISODES_FINAL_EVAL = PEERS_FINAL_EVAL_EPISODES; // PEERS: upstream 1000

int main(int argc, char** argv) {
    bool verbose = true;
    std::vector<decltype(run<NUM_EPISODES_FINAL_EVAL>(0, verbose))> returns;
    TI first_seed = argc > 1 ? (TI)std::stoul(argv[1]) : 0; // PEERS: upstream seed 0
    for (TI seed=first_seed; seed < first_seed + 1; seed++){
        auto return_stats = run<NUM_EPISODES_FINAL_EVAL>(seed, verbose);
        returns.push_back(return_stats);
    }
    T sum = 0;
    T sum_squared = 0;
    for(auto& return_stats: returns){
        sum += return_stats.returns_mean;
        sum_squared += return_stats.returns_mean * return_stats.returns_mean;
    }
    T mean = sum / returns.size();
    T std = std::sqrt(sum_squared / returns.size() - mean * mean);
    // median
    std::sort(returns.begin(), returns.end(), [](auto& a, auto& b){
        return a.returns_mean < b.returns_mean;
    });
    T median = returns[returns.size() / 2].returns_mean;
    std::cout << "Mean return: " << mean << std::endl;
    std::cout << "Std return: " << (returns.size() > 1 ? std::to_string(std) : "-")  << std::endl;
    std::cout << "Median return: " << median << std::endl;
#ifdef RL_TOOLS_ENABLE_JSON
    nlohmann::json j;
    for(auto& return_stats: returns){
        j.push_back(return_stats.returns);
    }
    std::ofstream file("pendulum_ppo_returns.json");
    file << j.dump(4);
#endif
    return 0;
}

// Should take ~ 0.3s on M3 Pro in BECHMARK mode
// - tested @ 1118e19f904a26a9619fac7b1680643a0afcb695)
// - tested @ 361c2f5e9b14d52ee497139a3b82867fce0404a7