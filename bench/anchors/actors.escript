#!/usr/bin/env escript
%%! +P 2000000
%% Erlang/OTP anchor for Reef's actor workloads (docs/benchmarks.md, "Actor workloads: Erlang
%% anchors"). Run by scripts/bench_anchors.sh; by hand:
%%
%%   ERL_FLAGS="+S 2:2" escript bench/anchors/actors.escript pingpong fanout call spawn
%%   ERL_FLAGS="+S 1:1" escript bench/anchors/actors.escript pingpong fanout call spawn
%%   escript bench/anchors/actors.escript memory              (alone: it needs a fresh VM)
%%
%% The mode is taken from the VM: +S 1:1 gives mode=one_thread, +S 2:2 (the default on two
%% cores) mode=two_threads. Every figure is printed as one machine-readable line:
%%
%%   bench engine=erlang kernel=pingpong mode=two_threads n=100000 result=100000
%%         unit=msg_per_s median=... runs=r1,r2,r3 [extra=...]
%%
%% median is the median of `runs` (timed runs after one untimed warm-up run; memory: one run).
%% `memory` must run alone in its VM (freed memory of other workloads would be reused).
%% Sizes come from the environment (defaults in brackets): REEF_BENCH_PINGPONG_N [1000000],
%% REEF_BENCH_PINGPONG_CROSS_N [100000 messages, the pair bound to two schedulers],
%% REEF_BENCH_FANOUT_WORKERS [1000], REEF_BENCH_FANOUT_ROUNDS [1000], REEF_BENCH_CALL_N [200000],
%% REEF_BENCH_CALL_CROSS_N [100000], REEF_BENCH_SPAWN_N [100000],
%% REEF_BENCH_MEMORY_SIZES [100000,1000000], REEF_BENCH_ACTOR_REPEATS [3].
-mode(compile).
%% The call workload's server is a gen_server of this module.
-behaviour(gen_server).
-export([init/1, handle_call/3, handle_cast/2]).

main(Workloads) ->
    Known = ["pingpong", "fanout", "call", "spawn", "memory"],
    case Workloads =/= [] andalso Workloads -- Known =:= [] andalso
        (not lists:member("memory", Workloads) orelse Workloads =:= ["memory"]) of
        true -> [run(list_to_atom(W)) || W <- Workloads], ok;
        false ->
            io:format(standard_error, "usage: escript actors.escript pingpong|fanout|call|spawn...~n"
                      "       escript actors.escript memory    (alone: it needs a fresh VM)~n", []),
            halt(2)
    end.

%% ---------------------------------------------------------------------------------------------

env(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        V -> list_to_integer(V)
    end.

repeats() -> env("REEF_BENCH_ACTOR_REPEATS", 3).

%% The number of scheduler threads running Erlang code (+S): Reef's counterpart is the number
%% of reactor threads.
mode() ->
    case erlang:system_info(schedulers_online) of
        1 -> one_thread;
        2 -> two_threads;
        S -> list_to_atom(integer_to_list(S) ++ "_threads")
    end.

now_ns() -> erlang:monotonic_time(nanosecond).

median(L) -> lists:nth(length(L) div 2 + 1, lists:sort(L)).

fmt(X) when is_float(X) -> io_lib:format("~.1f", [X]);
fmt(X) -> io_lib:format("~p", [X]).

emit(Kernel, Mode, N, Result, Unit, Runs, Extra) ->
    io:format("bench engine=erlang kernel=~s mode=~s n=~p result=~p unit=~s median=~s runs=~s~s~n",
              [Kernel, Mode, N, Result, Unit, fmt(median(Runs)),
               lists:join(",", [fmt(R) || R <- Runs]),
               [[" ", K, "=", V] || {K, V} <- Extra]]).

%% Runs Fun() (returns {Seconds, Result}) once untimed, then repeats() times.
sample(Fun) ->
    {_, _} = Fun(),
    Runs = [Fun() || _ <- lists:seq(1, repeats())],
    {[S || {S, _} <- Runs], element(2, hd(Runs))}.

%% Waits until no process is runnable (all spawned processes have reached their receive).
wait_idle() ->
    case erlang:statistics(total_run_queue_lengths) of
        0 -> ok;
        _ -> erlang:yield(), wait_idle()
    end.

%% ---------------------------------------------------------------------------------------------
%% ping-pong: two processes bounce one message N times; N messages in total.

run(pingpong) ->
    N = env("REEF_BENCH_PINGPONG_N", 1000000),
    case mode() of
        one_thread ->
            pingpong_mode(N, one_thread, [], []);
        Mode ->
            %% {scheduler, I} (an undocumented spawn_opt option of OTP 25) binds each process to
            %% its own scheduler's run queue: every message crosses from one scheduler thread to
            %% the other and usually has to wake it, which is far slower, hence a smaller N.
            %% Without it the VM is free to place both (it keeps them on one scheduler).
            pingpong_mode(env("REEF_BENCH_PINGPONG_CROSS_N", 100000), Mode,
                          [{scheduler, 1}], [{scheduler, 2}]),
            pingpong_mode(N, list_to_atom(atom_to_list(Mode) ++ "_unbound"), [], [])
    end;

%% fan-out/fan-in: a coordinator sends one message to each of W workers, each replies, the
%% coordinator waits for all W replies; R rounds. 2 * W messages per round.
run(fanout) ->
    W = env("REEF_BENCH_FANOUT_WORKERS", 1000),
    R = env("REEF_BENCH_FANOUT_ROUNDS", 1000),
    Workers = [spawn(fun worker/0) || _ <- lists:seq(1, W)],
    wait_idle(),
    {Secs, Result} = sample(fun() -> fanout(Workers, R) end),
    [P ! stop || P <- Workers],
    Extra = [{"workers", integer_to_list(W)}, {"rounds", integer_to_list(R)}],
    emit(fanout, mode(), W, Result, "rounds_per_s", [R / S || S <- Secs], Extra),
    emit(fanout_msg, mode(), W, Result, "msg_per_s", [2 * W * R / S || S <- Secs], Extra);

%% call: a client process makes N gen_server:call round trips, one after the other, to a
%% gen_server that answers each with its count of calls. Both on one scheduler (one_thread), or
%% bound to one scheduler each (two_threads, like ping-pong's bound pair).
run(call) ->
    N = env("REEF_BENCH_CALL_N", 200000),
    case mode() of
        one_thread -> call_mode(N, one_thread, [], []);
        Mode -> call_mode(env("REEF_BENCH_CALL_CROSS_N", 100000), Mode,
                          [{scheduler, 1}], [{scheduler, 2}])
    end;

%% spawn: spawn N processes that block in receive; the clock stops when all of them have run
%% to their receive (no runnable process left). They are stopped, untimed, between runs.
run(spawn) ->
    N = env("REEF_BENCH_SPAWN_N", 100000),
    {Secs, Result} = sample(fun() -> spawn_idle(N) end),
    emit(spawn, mode(), N, Result, "spawn_per_s", [N / S || S <- Secs], []);

%% memory: spawn idle processes (each blocked in receive, holding one integer) up to each size
%% in REEF_BENCH_MEMORY_SIZES, cumulatively in this VM (nothing is freed in between), and
%% report (now - before the first spawn) / size of the OS resident set (VmRSS of this beam
%% process) and of erlang:memory(processes). One run: a fresh VM per run is the driver's job.
run(memory) ->
    Sizes = [list_to_integer(S) ||
                S <- string:lexemes(case os:getenv("REEF_BENCH_MEMORY_SIZES") of
                                        false -> "100000,1000000";
                                        V -> V
                                    end, ",")],
    garbage_collect(),
    Rss0 = rss(), Vm0 = erlang:memory(processes), Count0 = erlang:system_info(process_count),
    lists:foldl(
      fun(Size, {Spawned, RssPrev}) ->
              spawn_n(Size - Spawned),
              wait_idle(),
              garbage_collect(),
              Count = erlang:system_info(process_count) - Count0,
              Size = Count,
              Rss = rss(), Vm = erlang:memory(processes),
              %% marginal: RSS growth per process since the previous size (since the start for
              %% the first size)
              Extra = [{"rss_mb", io_lib:format("~.1f", [Rss / 1048576])},
                       {"marginal", fmt((Rss - RssPrev) / (Size - Spawned))}],
              emit(idle_rss, mode(), Size, Count, "bytes_per_actor", [(Rss - Rss0) / Size], Extra),
              emit(idle_vm, mode(), Size, Count, "bytes_per_actor", [(Vm - Vm0) / Size], []),
              {Size, Rss}
      end, {0, Rss0}, Sizes).

%% ---------------------------------------------------------------------------------------------

pingpong_mode(N, Mode, OptsA, OptsB) ->
    {Secs, {Result, SchedA, SchedB}} = sample(fun() -> pingpong(N, OptsA, OptsB) end),
    emit(pingpong, Mode, N, Result, "msg_per_s", [N / S || S <- Secs],
         [{"schedulers", io_lib:format("~p+~p", [SchedA, SchedB])}]).

pingpong(N, OptsA, OptsB) ->
    Parent = self(),
    B = spawn_opt(fun() -> receive {peer, Peer} -> bounce(Parent, Peer, 0) end end, OptsB),
    A = spawn_opt(fun() -> bounce(Parent, B, 0) end, OptsA),
    B ! {peer, A},
    T0 = now_ns(),
    A ! N,
    receive {done, Count, S1} -> T1 = now_ns(),
            receive {stopped, Count2, S2} ->
                    {(T1 - T0) / 1.0e9, {Count + Count2, min(S1, S2), max(S1, S2)}} end
    end.

%% Receiving K > 0 sends K - 1 to the peer; receiving 0 ends the game. Counts messages received
%% from the peer, so Result = N.
bounce(Parent, Peer, Got) ->
    receive
        0 -> Peer ! stop, Parent ! {done, Got, erlang:system_info(scheduler_id)};
        stop -> Parent ! {stopped, Got, erlang:system_info(scheduler_id)};
        K -> Peer ! K - 1, bounce(Parent, Peer, Got + 1)
    end.

call_mode(N, Mode, ClientOpts, ServerOpts) ->
    {Secs, Result} = sample(fun() -> calls(N, ClientOpts, ServerOpts) end),
    emit(call, Mode, N, Result, "calls_per_s", [N / S || S <- Secs], []).

calls(N, ClientOpts, ServerOpts) ->
    {ok, Server} = gen_server:start(?MODULE, 0, [{spawn_opt, ServerOpts}]),
    Parent = self(),
    spawn_opt(fun() ->
                      T0 = now_ns(),
                      Last = call_loop(Server, N, 0),
                      Parent ! {called, (now_ns() - T0) / 1.0e9, Last}
              end, ClientOpts),
    receive {called, Secs, Last} -> gen_server:stop(Server), {Secs, Last} end.

call_loop(_, 0, Last) -> Last;
call_loop(Server, K, _) -> call_loop(Server, K - 1, gen_server:call(Server, get)).

init(Count) -> {ok, Count}.
handle_call(get, _From, Count) -> {reply, Count + 1, Count + 1}.
handle_cast(_, Count) -> {noreply, Count}.

worker() ->
    receive
        {ping, From} -> From ! pong, worker();
        stop -> ok
    end.

fanout(Workers, R) ->
    Msg = {ping, self()},
    T0 = now_ns(),
    Replies = fanout_rounds(Workers, Msg, length(Workers), R, 0),
    {(now_ns() - T0) / 1.0e9, Replies}.

fanout_rounds(_, _, _, 0, Acc) -> Acc;
fanout_rounds(Workers, Msg, W, R, Acc) ->
    [P ! Msg || P <- Workers],
    collect(W),
    fanout_rounds(Workers, Msg, W, R - 1, Acc + W).

collect(0) -> ok;
collect(K) -> receive pong -> collect(K - 1) end.

idle(State) ->
    receive
        {get, From} -> From ! State, idle(State);
        stop -> ok
    end.

spawn_n(0) -> ok;
spawn_n(K) -> spawn(fun() -> idle(K) end), spawn_n(K - 1).

spawn_idle(N) ->
    Count0 = erlang:system_info(process_count),
    T0 = now_ns(),
    Pids = spawn_list(N, []),
    wait_idle(),
    Secs = (now_ns() - T0) / 1.0e9,
    Count = erlang:system_info(process_count) - Count0,
    [P ! stop || P <- Pids],
    wait_count(Count0),
    {Secs, Count}.

spawn_list(0, Acc) -> Acc;
spawn_list(K, Acc) -> spawn_list(K - 1, [spawn(fun() -> idle(K) end) | Acc]).

wait_count(Count0) ->
    case erlang:system_info(process_count) > Count0 of
        true -> timer:sleep(1), wait_count(Count0);
        false -> ok
    end.

rss() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- binary:split(Status, <<"\n">>, [global]), binary:part(L, 0, min(6, byte_size(L))) =:= <<"VmRSS:">>],
    [_, Kb, <<"kB">>] = binary:split(Line, [<<" ">>, <<"\t">>], [global, trim_all]),
    binary_to_integer(Kb) * 1024.
