package kafkabroker

// ExpiredMembers is how many group members the broker's session keeper
// removed (see sessionKeeper).
func ExpiredMembers(b *Broker) int { return b.keeper.expiredCount() }
