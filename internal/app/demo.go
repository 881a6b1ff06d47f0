package app

// DemoChannelID is the sales channel of the demo reseller. It is fixed so
// that the README's curl commands and the demo data agree across restarts.
const DemoChannelID = "5e1f7c2a-0d4b-4c3e-9a61-2b7d3f9e8a10"

// DemoPrincipal is one of the fixed, publicly documented demo credentials
// (ARCHITECTURE.md, "Interfaces and conventions"). They exist only when
// SWITCHBACK_DEMO=true.
type DemoPrincipal struct {
	Role, Name, Key, Secret, ChannelID string
}

// DemoPrincipals returns the demo admin, operator and reseller.
func DemoPrincipals() []DemoPrincipal {
	return []DemoPrincipal{
		{Role: "admin", Name: "Demo admin", Key: "demo-admin", Secret: "demo-admin-secret"},
		{Role: "operator", Name: "Demo operator", Key: "demo-operator", Secret: "demo-operator-secret"},
		{Role: "reseller", Name: "Demo reseller", Key: "demo-reseller", Secret: "demo-reseller-secret", ChannelID: DemoChannelID},
	}
}
