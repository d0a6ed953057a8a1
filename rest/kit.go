package rest

import "sandfs/rest/httpkit"

// Route is one line of the route table (rest/httpkit holds the type, which
// the families' tables share).
type Route = httpkit.Route

// The families of the table: each renders errors in its own shape.
const (
	FamilyService = httpkit.FamilyService
	FamilyAgent   = httpkit.FamilyAgent
	FamilyAIOv1   = httpkit.FamilyAIOv1
	FamilyAIOv2   = httpkit.FamilyAIOv2
	FamilyNamed   = httpkit.FamilyNamed
)
