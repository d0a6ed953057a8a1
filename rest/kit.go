package rest

import "sandfs/rest/httpkit"

// Route is one line of the route table (rest/httpkit holds the type, which
// the families' tables share).
type Route = httpkit.Route

// Limits bound request bodies. Zero fields take the defaults of api.md §1.
type Limits = httpkit.Limits

// The families of the table: each renders errors in its own shape.
const (
	FamilyService  = httpkit.FamilyService
	FamilyAgent    = httpkit.FamilyAgent
	FamilyAIOv1    = httpkit.FamilyAIOv1
	FamilyAIOv2    = httpkit.FamilyAIOv2
	FamilyNamed    = httpkit.FamilyNamed
	FamilySandboxd = httpkit.FamilySandboxd
	FamilyMCP      = httpkit.FamilyMCP
)
