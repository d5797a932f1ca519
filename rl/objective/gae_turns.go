package objective

import "fmt"

// GAEOverTurns computes generalised advantage estimates over the trained tokens of multi-turn
// episodes, one episode per row. trained is the loss mask: 1 on sampled assistant tokens, 0 on
// the prompt, environment tokens, inserted boundary tokens and padding. The recursion runs over
// the trained tokens alone, as if each row's trained tokens were one dense sequence:
//
//	delta_t = r_t + gamma * V_{t'} - V_t,   A_t = delta_t + gamma*lam*A_{t'}
//
// where t' is the next trained position after t, and V and A are 0 past a row's last trained
// token (every episode stop is terminal). Untrained tokens are transparent: they get no
// advantage and do not cut the recursion, so gamma applies once per trained token and a turn's
// credit flows back through the environment's reply to earlier turns. Returns R_t = A_t + V_t;
// both are 0 off the mask, and values there are ignored.
//
// Rewards belong on trained tokens (a turn's reward on its last sampled token, any per-token
// penalty on each trained token). A nonzero reward on an untrained position is an error, not
// moved to a neighbour: it means rewards and tokens are misaligned, and no guess about which
// turn it was meant for is safe. Rows of episodes that are not trained (all-zero mask) must
// carry zero rewards.
func GAEOverTurns(rewards, values, trained [][]float64, gamma, lam float64) (adv, ret [][]float64, err error) {
	n, T := len(rewards), cols(rewards)
	if err := checkGAEOverTurns(rewards, values, trained, n, T, gamma, lam); err != nil {
		return nil, nil, err
	}
	adv, ret = Zeros(n, T), Zeros(n, T)
	for i := 0; i < n; i++ {
		var next, last float64
		for t := T - 1; t >= 0; t-- {
			if trained[i][t] == 0 {
				continue
			}
			delta := rewards[i][t] + gamma*next - values[i][t]
			last = delta + gamma*lam*last
			adv[i][t] = last
			ret[i][t] = last + values[i][t]
			next = values[i][t]
		}
	}
	return adv, ret, nil
}

// checkGAEOverTurns validates GAEOverTurns' arguments, naming the first bad one.
func checkGAEOverTurns(rewards, values, trained [][]float64, n, T int, gamma, lam float64) error {
	if err := checkMatrix("rewards", rewards, n, T); err != nil {
		return err
	}
	if err := checkMatrix("values", values, n, T); err != nil {
		return err
	}
	if err := checkMask("trained_mask", trained, n, T); err != nil {
		return err
	}
	if !(gamma >= 0 && gamma <= 1) {
		return fmt.Errorf("gamma %v: want a value in [0, 1]", gamma)
	}
	if !(lam >= 0 && lam <= 1) {
		return fmt.Errorf("lam %v: want a value in [0, 1]", lam)
	}
	for i := range rewards {
		for t, r := range rewards[i] {
			if r != 0 && trained[i][t] == 0 {
				return fmt.Errorf("rewards[%d][%d] is %v where trained_mask is 0: a reward belongs on a trained token (a turn's on its last sampled token)", i, t, r)
			}
		}
	}
	return nil
}
